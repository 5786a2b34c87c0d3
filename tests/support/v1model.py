"""Small v1model programs written inline in the tests, from their pieces.

Most front-end, interpreter and P4Info tests need a whole ``V1Switch`` program
around the few lines they are about.  :func:`v1model_program` wraps those lines
in one fixed skeleton: the parser ``P``, the controls ``VC``, ``IG``, ``EG``,
``CK`` and the deparser ``DP``; the program's own declarations (``headers``,
``meta`` and anything else) go before the parser.
"""

from __future__ import annotations

SKELETON = """
#include <core.p4>
#include <v1model.p4>
{decls}
parser P(packet_in pk, out headers hdr, inout meta m, inout standard_metadata_t sm) {{
{parser}
}}
control VC(inout headers hdr, inout meta m) {{ apply {{ }} }}
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{
{ingress}
}}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {{
{egress}
}}
control CK(inout headers hdr, inout meta m) {{ apply {{ }} }}
control DP(packet_out pk, in headers hdr) {{ apply {{ {deparser} }} }}
V1Switch(P(), VC(), IG(), EG(), CK(), DP()) main;
"""

DEFAULT_PARSER = "state start { pk.extract(hdr.h); transition accept; }"


def v1model_program(
    decls: str = "",
    ingress: str = "apply { }",
    parser: str = DEFAULT_PARSER,
    egress: str = "apply { }",
    deparser: str = "pk.emit(hdr);",
) -> str:
    """The source of a v1model program made of these pieces."""
    return SKELETON.format(
        decls=decls, parser=parser, ingress=ingress, egress=egress, deparser=deparser
    )
