"""``kvfabric compile``: a P4 program's P4Info, as p4c-bm2-ss writes it, and the device config.

    kvfabric compile PROG.p4 --p4runtime-files OUT.p4info.txtpb[,OUT.json,...]
                     [-o OUT.json] [-I DIR]... [-D NAME[=VALUE]]...

``--p4runtime-files`` takes a comma-separated list, like p4c; each file's
format follows its suffix: ``.txt`` and ``.txtpb`` protobuf text (byte-identical
to p4c's), ``.json`` protobuf JSON, ``.bin`` the binary wire format.
``-o`` writes the softswitch's device config (see
:mod:`softswitch.p4info.device_config`), which ``SetForwardingPipelineConfig``
carries to a ``kvfabric switch``.

It also takes the command lines of p4c-bm2-ss and of p4c's driver, so that
Makefiles written for them run unchanged (``kvfabric bmv2-shims`` installs
``p4c`` and ``p4c-bm2-ss`` as this command)::

    p4c-bm2-ss --p4v 16 --p4runtime-files OUT.p4info.txtpb -o OUT.json PROG.p4
    p4c --target bmv2 --arch v1model --p4runtime-files OUT.p4info.txtpb -o DIR PROG.p4

``-o`` names a directory when it is one, ends in ``/``, or the command line is
the driver's (``--target``, ``--arch`` or ``--p4c-driver``); the device config is
then ``DIR/<program stem>.json``, as p4c's driver writes it.  Targets, archs and
language versions other than bmv2, v1model and P4_16 are refused.  p4c options
that change nothing here (``--emit-externs``, ``--pp FILE``, ``-g``, ...) are
accepted with one ``note:`` line each on stderr.  Every output path is decided
before anything is written.

An error in the program prints one ``file:line:col: error: ...`` line and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kvfabric.commands.options import add_preprocessor_options
from softswitch import p4info
from softswitch.errors import SoftswitchError
from softswitch.frontend.preprocess import preprocess
from softswitch.p4info import device_config

_FORMATS = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}


def p4runtime_files(spec: str) -> list[tuple[str, str]]:
    """``"a.txtpb,b.json"`` -> [(path, format)]; argparse error on an unknown suffix."""
    files: list[tuple[str, str]] = []
    for name in spec.split(","):
        suffix = Path(name).suffix
        if not suffix:
            raise argparse.ArgumentTypeError(
                f"{name}: unknown file kind; known suffixes are .bin, .txt, .txtpb, .json"
            )
        if suffix not in _FORMATS:
            raise argparse.ArgumentTypeError(
                f"{name}: Could not detect p4runtime info file format from file suffix {suffix}"
            )
        files.append((name, _FORMATS[suffix]))
    return files


# p4c options accepted without effect: option -> (takes a value, why it changes nothing).
HARMLESS: dict[str, tuple[bool, str]] = {
    "--emit-externs": (False, "externs are part of the device config"),
    "-g": (False, "the device config carries the source itself"),
    "--pp": (True, "no pretty-printed P4 is written"),
    "--toJSON": (True, "the IR is not dumped"),
    "--dump": (True, "the IR is not dumped"),
    "--top4": (True, "the IR is not dumped"),
    "-T": (True, "no compiler logging"),
    "--p4runtime-format": (True, "the format follows each --p4runtime-files suffix"),
    "--Wdisable": (False, "no warnings are emitted"),
    "--Wwarn": (False, "no warnings are emitted"),
    "--Werror": (False, "no warnings are emitted"),
    "--disable-annotations": (True, "annotations are not checked"),
    "--parser-inline-opt": (False, "the interpreter needs no parser inlining"),
}


class _Note(argparse.Action):
    """Accept a harmless option; record one note line for it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        option = option_string or self.dest
        reason = HARMLESS[option][1]
        namespace.notes = [*getattr(namespace, "notes", []), f"note: {option} ignored: {reason}"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``kvfabric compile``."""
    parser.add_argument("program", metavar="PROG.p4", help="the P4_16 v1model program")
    parser.add_argument(
        "--p4runtime-files",
        type=p4runtime_files,
        default=[],
        metavar="FILES",
        help="comma-separated P4Info outputs; .txt/.txtpb, .json or .bin picks the format",
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write the softswitch device config (JSON) here"
    )
    add_preprocessor_options(parser)
    parser.add_argument(
        "--p4v", choices=["16"], help="language version (p4c-bm2-ss); only 16 (P4_16)"
    )
    parser.add_argument("--std", choices=["p4-16", "p4_16"], help="language version (p4c)")
    parser.add_argument("--target", choices=["bmv2"], help="p4c driver's target; only bmv2")
    parser.add_argument("--arch", choices=["v1model"], help="p4c driver's arch; only v1model")
    parser.add_argument(
        "--p4c-driver",
        action="store_true",
        help="-o names a directory, as for p4c's driver (implied by --target/--arch)",
    )
    parser.set_defaults(notes=[])
    for option, (takes_value, reason) in HARMLESS.items():
        parser.add_argument(
            option,
            action=_Note,
            nargs=1 if takes_value else 0,
            dest=f"harmless_{option.strip('-').replace('-', '_')}",
            metavar="X",
            help=f"accepted, ignored: {reason}",
        )


def output_path(args: argparse.Namespace) -> Path | None:
    """Where ``-o`` puts the device config: the file itself, or DIR/<stem>.json."""
    if not args.output:
        return None
    out = Path(args.output)
    driver = args.p4c_driver or args.target is not None or args.arch is not None
    if driver or out.is_dir() or args.output.endswith("/"):
        return out / f"{Path(args.program).stem}.json"
    return out


def run(args: argparse.Namespace) -> int:
    """Compile ``args.program``; 0 on success, 1 on an error in the program or an output."""
    defines = dict(args.defines)
    for note in args.notes:
        print(note, file=sys.stderr)
    output = output_path(args)
    try:
        if output is not None and not output.parent.is_dir():
            if output.parent == Path(args.output):
                output.parent.mkdir(parents=True)  # p4c's driver creates its output dir
            else:
                print(f"error: {output}: No such directory", file=sys.stderr)
                return 1
        program = p4info.load(args.program, args.include_dirs, defines)
        info = p4info.p4info_of(program)
        for path, fmt in args.p4runtime_files:
            p4info.write_p4info(info, path, fmt)
        if output is not None:
            source = preprocess(args.program, args.include_dirs, defines)
            config = device_config.make_device_config(source, args.program, info)
            device_config.write(output, config)
    except SoftswitchError as exc:
        print(exc, file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or args.program}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0
