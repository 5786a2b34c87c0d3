"""The seam between the switch and the interpreter.

The P4Runtime server and the packet loop see a loaded program only through
:class:`Dataplane`; :func:`make_loader` makes one from the device config of
``kvfabric compile -o`` and :func:`load_program_file` from the PROGRAM of the
command line (a ``.p4`` file or a device config file).

Parser value sets: the interpreter's parser tests its own ``ValueSetState``
(value/mask members).  P4Runtime needs the checked, canonical members for
reads, so each one is paired here with a :class:`softswitch.runtime.valuesets.ValueSet`
registered in the pipeline's ``RuntimeState`` (:class:`BoundValueSet`): the
server writes the runtime object, which hands the members on to the parser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from finsy.proto import p4i

from softswitch.errors import RuntimeConfigError, SoftswitchError
from softswitch.frontend import elaborate_program, ir, parse_text
from softswitch.frontend.preprocess import preprocess
from softswitch.interp.extern_funcs import ExternFunction
from softswitch.interp.objects import ValueSetState
from softswitch.interp.pipeline import Digest, Pipeline
from softswitch.p4info import device_config as dc
from softswitch.p4info import p4info_of
from softswitch.runtime import tables as rt
from softswitch.runtime.matches import mask_of, prefix_mask
from softswitch.runtime.state import RuntimeState
from softswitch.runtime.tm import QueueTicket
from softswitch.runtime.valuesets import ValueSet


class Queued(Protocol):
    """A packet between ingress and egress, as the traffic manager sees it."""

    @property
    def port(self) -> int: ...

    @property
    def priority(self) -> int: ...


class Dataplane(Protocol):
    """What the switch needs of ``softswitch.interp.pipeline.Pipeline``.

    ``ingress`` and ``egress`` are the two halves of the packet path, with the
    switch's traffic manager between them; ``process`` runs both at once.
    """

    @property
    def state(self) -> RuntimeState: ...

    @property
    def digests(self) -> list[Digest]: ...

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]: ...

    def ingress(self, port: int, data: bytes) -> Sequence[Queued]: ...

    def egress(
        self, job: Any, ticket: QueueTicket
    ) -> tuple[list[tuple[int, bytes]], Sequence[Queued]]: ...


DataplaneLoader = Callable[[p4i.P4Info, bytes], Dataplane]
Clock = Callable[[], int]


def take_digests(dataplane: Dataplane) -> list[tuple[str, tuple[int, ...]]]:
    """The digests emitted since the last call, as ``(digest name, field values)``."""
    pending = dataplane.digests
    if not pending:
        return []
    taken = [(digest.name, digest.values) for digest in pending]
    pending.clear()
    return taken


_KINDS: dict[int, rt.MatchKind] = {
    p4i.MatchField.EXACT: "exact",
    p4i.MatchField.LPM: "lpm",
    p4i.MatchField.TERNARY: "ternary",
    p4i.MatchField.RANGE: "range",
    p4i.MatchField.OPTIONAL: "optional",
}


class BoundValueSet(ValueSet):
    """A runtime value set whose members also program the interpreter's parser."""

    __slots__ = ("_parser",)

    def __init__(self, name: str, keys: list[rt.KeySpec], size: int, parser: ValueSetState) -> None:
        self._parser = parser
        super().__init__(name, keys, size)

    def set_members(self, members: Sequence[Sequence[rt.Match | None]]) -> None:
        """Replace every member (checked first); on error nothing changes."""
        for member in members:
            if any(isinstance(m, rt.Range) for m in member):
                raise RuntimeConfigError(
                    "UNIMPLEMENTED",
                    f"value set '{self.name}': range members (the parser matches value/mask)",
                )
        super().set_members(members)
        self._parser.clear()
        for member in self.members:
            masks = tuple(_mask(m, k.width) for m, k in zip(member, self.keys, strict=True))
            values = tuple(_value(m) for m in member)
            self._parser.add(values, masks)


def _value(match: rt.Match | None) -> int:
    if isinstance(match, rt.Exact | rt.Optional | rt.Lpm | rt.Ternary):
        return match.value
    return 0


def _mask(match: rt.Match | None, width: int) -> int:
    if isinstance(match, rt.Exact | rt.Optional):
        return mask_of(width)
    if isinstance(match, rt.Lpm):
        return prefix_mask(width, match.prefix_len)
    if isinstance(match, rt.Ternary):
        return match.mask
    return 0


def bind_value_sets(pipeline: Pipeline, p4info: p4i.P4Info) -> None:
    """Register a :class:`BoundValueSet` for every value set the P4Info declares."""
    state = pipeline.state
    for info in p4info.value_sets:
        name = info.preamble.name
        parser = pipeline.value_sets.get(name)
        if parser is None or name in state.value_sets:
            continue
        keys = [
            rt.KeySpec(mf.name or f"field{mf.id}", mf.bitwidth, _KINDS.get(mf.match_type, "exact"))
            for mf in info.match
        ]
        state.add_value_set(BoundValueSet(name, keys, info.size, parser))


def _pipeline_from_source(
    program_text: str,
    file: str,
    drop_port: int,
    cpu_port: int | None,
    clock: Clock | None,
    *,
    externs: Mapping[str, ExternFunction] | None = None,
    trace: bool = False,
) -> tuple[ir.Program, Pipeline]:
    """Compile preprocessed P4 source (with its ``# line`` markers) into a Pipeline."""
    program = elaborate_program(parse_text(program_text, file), file)
    pipeline = Pipeline.load(
        program,
        drop_port=drop_port,
        cpu_port=cpu_port,
        clock=clock,
        extern_functions=externs,
        trace=trace,
    )
    return program, pipeline


def make_loader(
    drop_port: int,
    cpu_port: int | None,
    clock: Clock | None = None,
    *,
    externs: Mapping[str, ExternFunction] | None = None,
    trace: bool = False,
) -> DataplaneLoader:
    """A loader for SetForwardingPipelineConfig: device config bytes -> Pipeline;
    ``externs`` implement the extern functions a program declares (``--load-modules``);
    ``trace`` builds pipelines that log each packet's way (the switch's trace log)."""

    def load(p4info: p4i.P4Info, device_config: bytes) -> Dataplane:
        if not device_config:
            raise RuntimeConfigError(
                "INVALID_ARGUMENT", "p4_device_config is empty: send `kvfabric compile -o` output"
            )
        config = dc.decode(device_config)
        dc.check_matches(config, p4info)
        try:
            _, pipeline = _pipeline_from_source(
                config.program,
                config.file,
                drop_port,
                cpu_port,
                clock,
                externs=externs,
                trace=trace,
            )
        except SoftswitchError as exc:
            raise RuntimeConfigError("INVALID_ARGUMENT", f"bad p4_device_config: {exc}") from None
        bind_value_sets(pipeline, p4info)
        dataplane: Dataplane = pipeline
        return dataplane

    return load


def p4info_of_program(program: ir.Program) -> p4i.P4Info:
    """The P4Info of an ``ir.Program``."""
    return p4info_of(program)


def load_program_file(
    path: str,
    drop_port: int,
    cpu_port: int | None,
    clock: Clock | None = None,
    *,
    externs: Mapping[str, ExternFunction] | None = None,
    trace: bool = False,
) -> tuple[p4i.P4Info, bytes, Dataplane]:
    """Load the PROGRAM of the command line: a ``.p4`` file or a device config file."""
    if path.endswith(".p4"):
        text = preprocess(path)
        program, pipeline = _pipeline_from_source(
            text, path, drop_port, cpu_port, clock, externs=externs, trace=trace
        )
        p4info = p4info_of_program(program)
        bind_value_sets(pipeline, p4info)
        device_config = dc.encode(dc.make_device_config(text, path, p4info))
        return p4info, device_config, pipeline
    config = dc.read(path)
    program, pipeline = _pipeline_from_source(
        config.program, config.file, drop_port, cpu_port, clock, externs=externs, trace=trace
    )
    p4info = p4info_of_program(program)
    dc.check_matches(config, p4info)
    bind_value_sets(pipeline, p4info)
    return p4info, dc.encode(config), pipeline
