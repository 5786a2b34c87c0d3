"""Errors of the fabric configuration, and the "did you mean" guess they carry.

    ControllerError
     +-- ConfigError    a bad fabric file: ``file:line:col: key.path: message``

Every problem that a user's file can cause is a :class:`ConfigError` that names the
file, the YAML path of the offending key (``links[3].a.port``) and what was expected;
the line and column come from the YAML loader's node marks when there is a node to
blame. ``kvfabric check-config`` prints ``str(error)`` and exits 1, never a traceback.
"""

from __future__ import annotations


class ControllerError(Exception):
    """Base of every error the controller reports to a user."""


class ConfigError(ControllerError):
    """A fabric file that cannot be loaded, located by file, key path and line."""

    def __init__(
        self,
        file: str,
        path: str,
        message: str,
        line: int | None = None,
        col: int | None = None,
    ) -> None:
        self.file = file
        self.path = path
        self.message = message
        self.line = line
        self.col = col
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        if self.path:
            return f"{where}: {self.path}: {self.message}"
        return f"{where}: {self.message}"
