"""The pipeline the controller pushes: compiled from P4 source, or given as files.

``kvfabric compile`` writes the P4Info and the device config; the controller runs it
in a child process (the compiler is the softswitch's, not the controller's) into a
private temporary directory, or takes ``--p4info``/``--p4blob`` files built
beforehand (for BMv2, the output of ``p4c-bm2-ss``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from controller.errors import PipelineError
from controller.service.southbound.switches import Pipeline


def compile_program(program: Path, work_dir: Path | None = None) -> Pipeline:
    """Compile ``program`` with ``kvfabric compile``; PipelineError with its message."""
    if not program.is_file():
        raise PipelineError(f"no P4 program at {str(program)!r}")
    out = Path(work_dir or tempfile.mkdtemp(prefix="kvfabric-controller-"))
    p4info, blob = out / "pipeline.p4info.txtpb", out / "pipeline.json"
    command = [
        sys.executable, "-m", "kvfabric.cli", "compile", str(program),
        "--p4runtime-files", str(p4info), "-o", str(blob),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PipelineError(f"kvfabric compile {program} failed:\n{result.stderr.strip()}")
    return load_pipeline(p4info, blob)


def load_pipeline(p4info: Path, blob: Path) -> Pipeline:
    """A pipeline from its P4Info (protobuf text) and device config files."""
    try:
        return Pipeline(p4info, blob.read_bytes())
    except OSError as exc:
        raise PipelineError(f"cannot read the device config {str(blob)!r}: {exc}") from None
