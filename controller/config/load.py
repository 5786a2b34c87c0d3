"""Loading a fabric file into the model: YAML, or p4lang/tutorials' ``topology.json``."""

from __future__ import annotations

from pathlib import Path

from controller.config.located import read_file
from controller.config.model import FabricConfig
from controller.config.sections import parse_document
from controller.config.tutorials import parse_tutorials_topology


def load_config(path: str | Path) -> FabricConfig:
    """Load and validate a fabric file: YAML, or p4lang/tutorials' ``topology.json``."""
    file = str(path)
    text = read_file(path)
    if file.endswith(".json"):
        return parse_tutorials_topology(text, file)
    return parse_config(text, file, base_dir=Path(path).parent)


def parse_config(text: str, file: str = "<string>", base_dir: Path | None = None) -> FabricConfig:
    """Validate the YAML ``text`` of a fabric; ``file`` names it in errors.

    ``base_dir`` is where relative paths of the file (TLS certificates, token file)
    are resolved; the current directory when None.
    """
    return parse_document(text, file, base_dir or Path.cwd())
