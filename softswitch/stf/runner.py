"""Running an STF file against a P4 program.

``run_stf`` compiles the program with the front-end, loads it into an
interpreter :class:`~softswitch.interp.pipeline.Pipeline` and hands both to
``run_script``, which does the work against anything shaped like a pipeline
(a ``state`` and a ``process(port, data)``), so that its logic can be tested
without a compiler.

The commands run in file order, which is also what p4c's BMv2 driver
achieves with its pauses: each ``packet`` goes through the whole pipeline
before the next line is read, so a table entry added after a packet does
not affect it, and a ``register_read`` sees every packet before it. The
``expect`` lines are collected and compared at the end, port by port, with
the rules of :mod:`softswitch.stf.expect`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from softswitch.frontend import load_program
from softswitch.interp.extern_funcs import load_modules
from softswitch.interp.pipeline import Pipeline
from softswitch.runtime.state import RuntimeState
from softswitch.stf import syntax
from softswitch.stf.control import CheckFailure, ControlPlane
from softswitch.stf.expect import PortReport, compare_outputs, format_reports


class Target(Protocol):
    """What the runner needs of a loaded pipeline."""

    @property
    def state(self) -> RuntimeState: ...

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]: ...


@dataclass(frozen=True, slots=True)
class StfResult:
    """The outcome of one STF run: per-port comparisons and failed checks."""

    stf_file: str
    ports: tuple[PortReport, ...]
    check_failures: tuple[CheckFailure, ...] = ()
    packets_sent: int = 0
    outputs: Mapping[int, tuple[bytes, ...]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.check_failures and all(report.ok for report in self.ports)

    def report(self, *, verbose: bool = False) -> str:
        """Readable text: a per-port diff of expected against received packets
        (every port when ``verbose``, else only failing ones), then failed checks."""
        lines: list[str] = []
        diff = format_reports(self.ports, self.stf_file, all_ports=verbose)
        if diff:
            lines.append(diff)
        lines.extend(
            f"{self.stf_file}:{failure.line}: check failed: {failure.message}"
            for failure in self.check_failures
        )
        received = sum(len(r.received) for r in self.ports)
        verdict = "PASS" if self.passed else "FAIL"
        sent = "1 packet" if self.packets_sent == 1 else f"{self.packets_sent} packets"
        lines.append(f"{verdict}: {self.stf_file}: {sent} sent, {received} received")
        return "\n".join(lines)


def run_script(script: syntax.StfScript, target: Target) -> StfResult:
    """Run the commands of a parsed STF file against a loaded pipeline.

    Raises StfError, located at its line, for a command the pipeline cannot
    accept (unknown table, bad key value, ...).
    """
    control: ControlPlane | None = None
    outputs: dict[int, list[bytes]] = {}
    expects: list[syntax.Expect] = []
    interfaces: set[int] = set()
    failures: list[CheckFailure] = []
    sent = 0
    for command in script.commands:
        if isinstance(command, syntax.Packet):
            interfaces.add(command.port)
            sent += 1
            for port, data in target.process(command.port, command.data):
                outputs.setdefault(port, []).append(bytes(data))
        elif isinstance(command, syntax.Expect):
            interfaces.add(command.port)
            expects.append(command)
        elif isinstance(command, syntax.NoPacket | syntax.Wait):
            continue
        else:
            if control is None:
                control = ControlPlane(target.state, script.file)
            failures.extend(control.apply(command))
    reports = compare_outputs(expects, outputs, interfaces)
    frozen = {port: tuple(packets) for port, packets in outputs.items()}
    return StfResult(script.file, reports, tuple(failures), sent, frozen)


def run_stf(
    program_path: str | Path,
    stf_path: str | Path,
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    modules: Sequence[str] = (),
) -> StfResult:
    """Compile ``program_path``, load it and run ``stf_path`` against it;
    ``modules`` are Python files of extern functions the program declares
    (:mod:`softswitch.interp.extern_funcs`).

    Raises StfError for a bad STF file, P4SourceError (or UnsupportedError)
    for a program the front-end or the interpreter rejects, ExternModuleError
    for a module that does not load.
    """
    script = syntax.parse_stf_file(stf_path)
    program = load_program(str(program_path), include_dirs, dict(defines or {}))
    externs = load_modules(modules)
    pipeline: Target = Pipeline.load(program, extern_functions=externs)
    return run_script(script, pipeline)
