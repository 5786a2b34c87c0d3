"""Exceptions of the softswitch target, and source locations.

    SoftswitchError
     +-- P4SourceError          a bad P4 program: ``file:line:col: error: message``
     |    +-- UnsupportedError  a construct the target parses but does not execute
     +-- StfError               a bad STF test file: ``file:line: error: message``
     +-- RuntimeConfigError     a bad control-plane request (entry, index, action...)

Every error that user input can cause is one of these; the command line prints
``str(error)`` and exits with a status, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a source file; line and column count from 1."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class SoftswitchError(Exception):
    """Base of every error the target reports to a user."""


class P4SourceError(SoftswitchError):
    """An error in a P4 program, located at ``loc``."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(f"{loc}: error: {message}")
        self.loc = loc
        self.message = message


class UnsupportedError(P4SourceError):
    """A valid P4 construct that this target does not execute."""

    def __init__(self, loc: Loc, feature: str) -> None:
        super().__init__(loc, f"unsupported: {feature}")
        self.feature = feature


class StfError(SoftswitchError):
    """An error in an STF test file, located at ``file:line``."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: error: {message}")
        self.file = file
        self.line = line
        self.message = message


class RuntimeConfigError(SoftswitchError):
    """A control-plane request the running pipeline cannot accept.

    ``code`` names the P4Runtime status that the request deserves
    (``"INVALID_ARGUMENT"``, ``"NOT_FOUND"``, ``"ALREADY_EXISTS"``,
    ``"OUT_OF_RANGE"``, ``"RESOURCE_EXHAUSTED"``, ``"FAILED_PRECONDITION"``,
    ``"UNIMPLEMENTED"``, ``"PERMISSION_DENIED"``).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
