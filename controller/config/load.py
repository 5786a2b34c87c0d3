"""Loading a fabric file into the model: YAML, or p4lang/tutorials' ``topology.json``."""

from __future__ import annotations

from pathlib import Path

from controller.config.model import FabricConfig
from controller.config.sections import parse_document
from controller.config.tutorials import parse_tutorials_topology
from controller.errors import ConfigError


def load_config(path: str | Path) -> FabricConfig:
    """Load and validate a fabric file: YAML, or p4lang/tutorials' ``topology.json``."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(file, "", f"cannot read the file: {reason}") from None
    if file.endswith(".json"):
        return parse_tutorials_topology(text, file)
    return parse_config(text, file, base_dir=Path(path).parent)


def parse_config(text: str, file: str = "<string>", base_dir: Path | None = None) -> FabricConfig:
    """Validate the YAML ``text`` of a fabric; ``file`` names it in errors.

    ``base_dir`` is where relative paths of the file (TLS certificates, token file)
    are resolved; the current directory when None.
    """
    return parse_document(text, file, base_dir or Path.cwd())
