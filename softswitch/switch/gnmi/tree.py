"""The data the switch serves over gNMI: OpenConfig's interfaces, one leaf at a time.

For every port ``-i PORT@N`` (``N`` the interface's name)::

    /interfaces/interface[name=N]/config/name                       N
    /interfaces/interface[name=N]/state/name                        N
    /interfaces/interface[name=N]/state/ifindex                     PORT (uint)
    /interfaces/interface[name=N]/state/id                          PORT (uint)
    /interfaces/interface[name=N]/state/admin-status                UP | DOWN
    /interfaces/interface[name=N]/state/oper-status                 UP | DOWN | ...
    /interfaces/interface[name=N]/ethernet/config/port-speed        SPEED_100GB | ...
    /interfaces/interface[name=N]/ethernet/state/port-speed         SPEED_100GB | ...
    /interfaces/interface[name=N]/ethernet/config/port-speed-bps    bit/s (uint)
    /interfaces/interface[name=N]/ethernet/state/port-speed-bps     bit/s (uint)

``ifindex`` and ``id`` are the port's P4Runtime number, as Stratum serves them (finsy
reads ``ifindex`` to number a switch's ports). ``port-speed`` is OpenConfig's
identity, ``SPEED_UNKNOWN`` when the rate is none of them or is not known;
``port-speed-bps`` is this switch's own leaf, not OpenConfig's: the exact rate,
absent when it is not known. The ``config`` leaves are the speed in force (provisioned,
or the kernel's); ``Set`` writes them (:mod:`~softswitch.switch.gnmi.service`).

Every leaf is a scalar, sent as its ``TypedValue`` (``string_val``, ``uint_val``)
whatever encoding was asked among PROTO, JSON and JSON_IETF, as Stratum does.

A request's path selects the leaves it is a prefix of: ``*`` matches any element name
and ``[name=*]`` (or no key at all) any interface; ``/`` alone is everything. Its
origin is OpenConfig's (empty or ``openconfig``). A path without wildcards that
selects nothing is NOT_FOUND; a wildcard that matches nothing selects nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from finsy.proto import gnmi

from softswitch.errors import SoftswitchError
from softswitch.switch.interfaces import Interfaces, PortView, speed_name

Scalar = str | int
Elem = tuple[str, tuple[tuple[str, str], ...]]

ORIGINS = ("", "openconfig")
ENCODINGS = (gnmi.Encoding.JSON, gnmi.Encoding.JSON_IETF, gnmi.Encoding.PROTO)
"""The encodings a request may ask for (every leaf is a scalar: see the module docstring)."""

_SHAPE: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (("config", "name"), "name", True),
    (("state", "name"), "name", False),
    (("state", "ifindex"), "port", False),
    (("state", "id"), "port", False),
    (("state", "admin-status"), "admin-status", False),
    (("state", "oper-status"), "oper-status", False),
    (("ethernet", "config", "port-speed"), "port-speed", True),
    (("ethernet", "state", "port-speed"), "port-speed", False),
    (("ethernet", "config", "port-speed-bps"), "port-speed-bps", True),
    (("ethernet", "state", "port-speed-bps"), "port-speed-bps", False),
)
"""Each leaf under ``/interfaces/interface[name=N]``: its path, what it shows, and
whether it is configuration."""

SPEED_LEAVES = ("port-speed", "port-speed-bps")
"""The leaves a ``Set`` may write (their ``config`` version)."""


class GnmiError(SoftswitchError):
    """A gNMI request the switch refuses; ``code`` names its gRPC status."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True, eq=False)
class Leaf:
    """One leaf of one port: its elements, its path as a protobuf, what it shows."""

    elems: tuple[Elem, ...]
    path: gnmi.Path
    port: int
    kind: str
    config: bool


def show(path: gnmi.Path) -> str:
    """A path as gNMI's string notation: ``/interfaces/interface[name=eth1]/state``."""
    parts = [e.name + "".join(f"[{k}={v}]" for k, v in sorted(e.key.items())) for e in path.elem]
    text = "/" + "/".join(parts)
    return f"{path.origin}:{text}" if path.origin else text


def join(prefix: gnmi.Path | None, path: gnmi.Path) -> gnmi.Path:
    """``path`` under ``prefix`` (a request's), checked: a deprecated string path, an
    origin that is not OpenConfig's or a ``...`` element is refused."""
    whole = gnmi.Path()
    if prefix is not None:
        whole.CopyFrom(prefix)
    whole.elem.extend(path.elem)
    if path.origin:
        whole.origin = path.origin
    if path.element or (prefix is not None and prefix.element):
        raise GnmiError("INVALID_ARGUMENT", "paths are given as 'elem', not the old 'element'")
    if whole.origin not in ORIGINS:
        raise GnmiError(
            "INVALID_ARGUMENT",
            f"origin {whole.origin!r}: this switch serves OpenConfig only (origin '' or "
            "'openconfig')",
        )
    if any(e.name == "..." for e in whole.elem):
        raise GnmiError("INVALID_ARGUMENT", f"{show(whole)}: '...' is not supported; use '*'")
    return whole


def check_encoding(encoding: gnmi.Encoding.ValueType) -> None:
    """Refuse an encoding outside :data:`ENCODINGS`."""
    if encoding not in ENCODINGS:
        names = ", ".join(gnmi.Encoding.Name(e) for e in ENCODINGS)
        raise GnmiError(
            "UNIMPLEMENTED", f"encoding {gnmi.Encoding.Name(encoding)} is not supported ({names})"
        )


def typed(value: Scalar) -> gnmi.TypedValue:
    """A leaf's value as gNMI's scalar ``TypedValue``."""
    if isinstance(value, int):
        return gnmi.TypedValue(uint_val=value)
    return gnmi.TypedValue(string_val=value)


def scalar(value: gnmi.TypedValue) -> Scalar | None:
    """The scalar a client sent (a typed scalar, or one in JSON); None if it is none."""
    kind = value.WhichOneof("value")
    if kind in ("string_val", "uint_val", "int_val"):
        got: Scalar = getattr(value, kind)
        return got
    if kind in ("json_val", "json_ietf_val"):
        try:
            decoded = json.loads(getattr(value, kind))
        except ValueError:
            return None
        return decoded if isinstance(decoded, str | int) and not isinstance(decoded, bool) else None
    return None


class Tree:
    """Every leaf of every port of ``interfaces``, and the values they show now."""

    def __init__(self, interfaces: Interfaces) -> None:
        self.interfaces = interfaces
        self.leaves: list[Leaf] = []
        for number, name in interfaces.names.items():
            top: tuple[Elem, ...] = (("interfaces", ()), ("interface", (("name", name),)))
            for rest, kind, config in _SHAPE:
                elems = top + tuple((n, ()) for n in rest)
                path = gnmi.Path(elem=[gnmi.PathElem(name=n, key=dict(k)) for n, k in elems])
                self.leaves.append(Leaf(elems, path, number, kind, config))

    def select(self, path: gnmi.Path, data_type: int = gnmi.GetRequest.ALL) -> list[Leaf]:
        """The leaves under ``path`` (joined and checked) of ``data_type`` (a GetRequest's
        ALL, CONFIG, STATE or OPERATIONAL); NOT_FOUND for a path without wildcards that
        selects no leaf at all."""
        found = [leaf for leaf in self.leaves if _under(path, leaf.elems)]
        if not found and not _wildcarded(path):
            raise GnmiError("NOT_FOUND", f"no data at {show(path)}")
        if data_type == gnmi.GetRequest.CONFIG:
            return [leaf for leaf in found if leaf.config]
        if data_type in (gnmi.GetRequest.STATE, gnmi.GetRequest.OPERATIONAL):
            return [leaf for leaf in found if not leaf.config]
        return found

    def values(self, leaves: Iterable[Leaf]) -> list[tuple[Leaf, Scalar | None]]:
        """Each leaf with its value now (None: it has none, e.g. an unknown speed in
        bit/s); every port is read once."""
        views: dict[int, PortView] = {}
        out: list[tuple[Leaf, Scalar | None]] = []
        for leaf in leaves:
            view = views.get(leaf.port)
            if view is None:
                view = views[leaf.port] = self.interfaces.view(leaf.port)
            out.append((leaf, _value(leaf.kind, view)))
        return out

    def settable(self, path: gnmi.Path) -> Leaf:
        """The one configuration leaf a Set may write at ``path`` (a port's speed)."""
        if _wildcarded(path):
            raise GnmiError("INVALID_ARGUMENT", f"{show(path)}: a Set names one leaf, no wildcard")
        leaves = [leaf for leaf in self.select(path) if leaf.elems == _elems(path)]
        if not leaves or not leaves[0].config or leaves[0].kind not in SPEED_LEAVES:
            raise GnmiError(
                "INVALID_ARGUMENT",
                f"{show(path)} cannot be set: a Set writes a port's speed "
                "(.../ethernet/config/port-speed or port-speed-bps)",
            )
        return leaves[0]


def notification(
    values: Sequence[tuple[Leaf, Scalar | None]], target: str = ""
) -> gnmi.Notification:
    """A notification of ``values`` now: leaves with a value are updated, leaves without
    one deleted (full paths; ``target`` echoed in the prefix)."""
    note = gnmi.Notification(timestamp=time.time_ns())
    if target:
        note.prefix.target = target
    for leaf, value in values:
        if value is None:
            note.delete.append(leaf.path)
        else:
            note.update.append(gnmi.Update(path=leaf.path, val=typed(value)))
    return note


def _value(kind: str, view: PortView) -> Scalar | None:
    if kind == "name":
        return view.name
    if kind == "port":
        return view.number
    if kind == "admin-status":
        return "UP" if view.admin_up else "DOWN"
    if kind == "oper-status":
        return str(view.oper_status)
    if kind == "port-speed":
        return speed_name(view.speed_bps)
    return view.speed_bps


def _elems(path: gnmi.Path) -> tuple[Elem, ...]:
    return tuple((e.name, tuple(sorted(e.key.items()))) for e in path.elem)


def _under(path: gnmi.Path, elems: tuple[Elem, ...]) -> bool:
    """True when ``path`` is a (wildcarded) prefix of the leaf ``elems``."""
    if len(path.elem) > len(elems):
        return False
    for asked, (name, keys) in zip(path.elem, elems, strict=False):
        if asked.name not in ("*", name):
            return False
        have = dict(keys)
        for key, value in asked.key.items():
            if value != "*" and have.get(key) != value:
                return False
    return True


def _wildcarded(path: gnmi.Path) -> bool:
    """True when ``path`` has a wildcard, or leaves the interface's key out."""
    for e in path.elem:
        if e.name == "*" or any(v == "*" for v in e.key.values()):
            return True
        if e.name == "interface" and "name" not in e.key:
            return True
    return not path.elem
