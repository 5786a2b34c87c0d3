"""The seam between the switch and the interpreter.

The P4Runtime server and the packet loop see a loaded program only through
:class:`Dataplane`; :func:`load_dataplane` makes one from the device config of
``kvfabric compile -o`` (or a ``.p4`` file at start-up).  Tests can inject any
other loader with the same signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from finsy.proto import p4i

from softswitch.errors import RuntimeConfigError, SoftswitchError
from softswitch.frontend import elaborate_program, ir, parse_text
from softswitch.frontend.preprocess import preprocess
from softswitch.interp.pipeline import Digest, Pipeline
from softswitch.p4info import device_config as dc
from softswitch.p4info import p4info_of
from softswitch.runtime.state import RuntimeState


class Dataplane(Protocol):
    """What the switch needs of ``softswitch.interp.pipeline.Pipeline``."""

    @property
    def state(self) -> RuntimeState: ...

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]: ...


DataplaneLoader = Callable[[p4i.P4Info, bytes], Dataplane]


def take_digests(dataplane: Dataplane) -> list[tuple[str, tuple[int, ...]]]:
    """The digests emitted since the last call, as ``(digest name, field values)``."""
    pending: list[Digest] | None = getattr(dataplane, "digests", None)
    if not pending:
        return []
    taken = [(digest.name, digest.values) for digest in pending]
    pending.clear()
    return taken


def _pipeline_from_source(
    program_text: str, file: str, drop_port: int, cpu_port: int | None
) -> tuple[ir.Program, Pipeline]:
    """Compile preprocessed P4 source (with its ``# line`` markers) into a Pipeline."""
    program = elaborate_program(parse_text(program_text, file), file)
    return program, Pipeline.load(program, drop_port=drop_port, cpu_port=cpu_port)


def make_loader(drop_port: int, cpu_port: int | None) -> DataplaneLoader:
    """A loader for SetForwardingPipelineConfig: device config bytes -> Pipeline."""

    def load(p4info: p4i.P4Info, device_config: bytes) -> Dataplane:
        if not device_config:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", "p4_device_config is empty: send `kvfabric compile -o` output"
            )
        config = dc.decode(device_config)
        dc.check_matches(config, p4info)
        try:
            _, pipeline = _pipeline_from_source(config.program, config.file, drop_port, cpu_port)
        except SoftswitchError as exc:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"bad p4_device_config: {exc}") from None
        dataplane: Dataplane = pipeline
        return dataplane

    return load


def p4info_of_program(program: ir.Program) -> p4i.P4Info:
    """The P4Info of an ``ir.Program``."""
    return p4info_of(program)


def load_program_file(
    path: str, drop_port: int, cpu_port: int | None
) -> tuple[p4i.P4Info, bytes, Dataplane]:
    """Load the PROGRAM of the command line: a ``.p4`` file or a device config file."""
    if path.endswith(".p4"):
        text = preprocess(path)
        program, pipeline = _pipeline_from_source(text, path, drop_port, cpu_port)
        p4info = p4info_of_program(program)
        device_config = dc.encode(dc.make_device_config(text, path, p4info))
        return p4info, device_config, pipeline
    config = dc.read(path)
    program, pipeline = _pipeline_from_source(config.program, config.file, drop_port, cpu_port)
    p4info = p4info_of_program(program)
    dc.check_matches(config, p4info)
    return p4info, dc.encode(config), pipeline
