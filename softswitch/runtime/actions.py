"""Actions as the runtime sees them: a name, a tuple of int arguments, a scope.

An :class:`ActionSpec` is what the program declares (parameter names and
widths, and where the action may be used); an :class:`ActionCall` is one use
of it (the name and the argument values).  :func:`check_action_call` applies
P4Runtime's rules to a call, for a table entry or a default action, and is
shared by tables and action profiles.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from softswitch.errors import RuntimeConfigError


class ActionScope(enum.Enum):
    """Where an action may be used in a table (P4Info ``ActionRef.Scope``)."""

    TABLE_AND_DEFAULT = "TABLE_AND_DEFAULT"
    TABLE_ONLY = "TABLE_ONLY"  # @tableonly
    DEFAULT_ONLY = "DEFAULT_ONLY"  # @defaultonly


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """An action of a table: its control-plane name, ``(name, width)`` params, scope."""

    name: str
    params: tuple[tuple[str, int], ...] = ()
    scope: ActionScope = ActionScope.TABLE_AND_DEFAULT


@dataclass(frozen=True, slots=True)
class ActionCall:
    """An action with its argument values, in parameter order."""

    name: str
    args: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(a) for a in self.args)})"


NO_ACTION = ActionCall("NoAction")


def check_action_call(
    owner: str, actions: Mapping[str, ActionSpec], call: ActionCall, *, default: bool
) -> None:
    """Raise RuntimeConfigError unless ``call`` is allowed in ``owner``.

    Unknown action and wrong argument count are INVALID_ARGUMENT, an argument
    that does not fit its width is OUT_OF_RANGE, and an action used outside its
    scope (a @defaultonly action in an entry, a @tableonly one as default) is
    PERMISSION_DENIED, as P4Runtime prescribes.
    """
    spec = actions.get(call.name)
    if spec is None:
        raise RuntimeConfigError(
            "INVALID_ARGUMENT", f"action '{call.name}' is not an action of '{owner}'"
        )
    if default and spec.scope is ActionScope.TABLE_ONLY:
        raise RuntimeConfigError(
            "PERMISSION_DENIED",
            f"action '{call.name}' is @tableonly in '{owner}' and cannot be the default action",
        )
    if not default and spec.scope is ActionScope.DEFAULT_ONLY:
        raise RuntimeConfigError(
            "PERMISSION_DENIED",
            f"action '{call.name}' is @defaultonly in '{owner}' and cannot be used in an entry",
        )
    if len(call.args) != len(spec.params):
        raise RuntimeConfigError(
            "INVALID_ARGUMENT",
            f"action '{call.name}' takes {len(spec.params)} argument(s), got {len(call.args)}",
        )
    for value, (pname, width) in zip(call.args, spec.params, strict=True):
        if value < 0 or value >> width:
            raise RuntimeConfigError(
                "OUT_OF_RANGE",
                f"argument '{pname}' of action '{call.name}' is {value}, "
                f"which does not fit in {width} bits",
            )
