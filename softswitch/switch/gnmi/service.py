"""The gRPC face of the switch's gNMI data (grpc.aio).

It is served by the same gRPC server as P4Runtime, on the same port, as Stratum
serves both; a controller reads it on its P4Runtime channel (finsy's ``GNMIClient``
does). The RPCs:

- ``Capabilities``: the OpenConfig models the paths come from, the encodings, and
  gNMI's version (the bundled ``gnmi.proto``'s);
- ``Get``: the leaves under each path (:class:`~softswitch.switch.gnmi.tree.Tree`), one
  notification per path;
- ``Set``: ``update``/``replace`` of a port's ``ethernet/config/port-speed`` (an
  OpenConfig speed) or ``port-speed-bps`` (bit/s), and ``delete`` of either, which
  puts the port back at the command line's speed (or the kernel's). All or nothing:
  every operation is checked before any applies;
- ``Subscribe``: :mod:`~softswitch.switch.gnmi.subscribe`.

A refused request is a :class:`~softswitch.switch.gnmi.tree.GnmiError`, translated
here into the gRPC status it names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from finsy.proto import gnmi, gnmi_grpc
from google.protobuf import text_format

from softswitch.switch.gnmi.subscribe import Subscription
from softswitch.switch.gnmi.tree import (
    ENCODINGS,
    GnmiError,
    Leaf,
    Tree,
    check_encoding,
    join,
    notification,
    scalar,
    show,
)
from softswitch.switch.interfaces import (
    ETHERNET_MODULE,
    Interfaces,
    SpeedError,
    speed_name,
    speed_of,
)

LOG = logging.getLogger("kvfabric.switch.gnmi")
Context = grpc.aio.ServicerContext[Any, Any]
OPENCONFIG = "OpenConfig working group"
MODELS = (
    gnmi.ModelData(name="openconfig-interfaces", organization=OPENCONFIG),
    gnmi.ModelData(name=ETHERNET_MODULE, organization=OPENCONFIG),
)
VERSION: str = gnmi.DESCRIPTOR.GetOptions().Extensions[gnmi.gnmi_service]


async def _abort(context: Context, exc: GnmiError) -> None:
    code = grpc.StatusCode[exc.code]
    await context.abort(code, exc.message)


class GnmiService(gnmi_grpc.gNMIServicer):
    """gNMI's RPCs over the switch's ports (see the module docstring)."""

    def __init__(self, interfaces: Interfaces) -> None:
        self.interfaces = interfaces
        self.tree = Tree(interfaces)

    async def Capabilities(  # noqa: N802 (gRPC method name)
        self, request: gnmi.CapabilityRequest, context: Context
    ) -> gnmi.CapabilityResponse:
        return gnmi.CapabilityResponse(
            supported_models=MODELS, supported_encodings=ENCODINGS, gNMI_version=VERSION
        )

    async def Get(  # noqa: N802
        self, request: gnmi.GetRequest, context: Context
    ) -> gnmi.GetResponse:
        try:
            return self.get(request)
        except GnmiError as exc:
            await _abort(context, exc)
            raise AssertionError("unreachable") from None

    def get(self, request: gnmi.GetRequest) -> gnmi.GetResponse:
        """The answer to ``request``; a :class:`GnmiError` if it is refused."""
        check_encoding(request.encoding)
        prefix = request.prefix if request.HasField("prefix") else None
        selected = [self.tree.select(join(prefix, p), request.type) for p in request.path]
        if not request.path:
            selected = [self.tree.select(join(prefix, gnmi.Path()), request.type)]
        target = request.prefix.target
        return gnmi.GetResponse(
            notification=[notification(self.tree.values(leaves), target) for leaves in selected]
        )

    async def Set(  # noqa: N802
        self, request: gnmi.SetRequest, context: Context
    ) -> gnmi.SetResponse:
        try:
            return self.set(request)
        except GnmiError as exc:
            await _abort(context, exc)
            raise AssertionError("unreachable") from None

    def set(self, request: gnmi.SetRequest) -> gnmi.SetResponse:
        """Apply ``request`` whole, or refuse it whole with a :class:`GnmiError`."""
        if request.union_replace:
            raise GnmiError("UNIMPLEMENTED", "union_replace is not supported")
        prefix = request.prefix if request.HasField("prefix") else None
        op = gnmi.UpdateResult.Operation
        plan: list[tuple[Leaf, int | None, gnmi.Path, gnmi.UpdateResult.Operation.ValueType]] = []
        for path in request.delete:
            whole = join(prefix, path)
            plan.append((self.tree.settable(whole), None, path, op.DELETE))
        for updates, kind in ((request.replace, op.REPLACE), (request.update, op.UPDATE)):
            for update in updates:
                leaf = self.tree.settable(join(prefix, update.path))
                plan.append((leaf, _speed(leaf, update), update.path, kind))
        for leaf, bps, _path, _kind in plan:
            self.interfaces.set_speed(leaf.port, bps)
            name = self.interfaces.names[leaf.port]
            shown = speed_name(bps) if bps is not None else "its default speed"
            LOG.info("gNMI Set: port %d (%s) at %s (%s bit/s)", leaf.port, name, shown, bps)
        return gnmi.SetResponse(
            prefix=request.prefix,
            response=[gnmi.UpdateResult(path=p, op=kind) for _, _, p, kind in plan],
            timestamp=time.time_ns(),
        )

    async def Subscribe(  # noqa: N802
        self, request_iterator: AsyncIterator[gnmi.SubscribeRequest], context: Context
    ) -> AsyncIterator[gnmi.SubscribeResponse]:
        requests = aiter(request_iterator)
        first = await anext(requests, None)
        if first is None:
            return
        try:
            subscription = Subscription.open(self.tree, first)
            async for response in subscription.responses(requests):
                yield response
        except GnmiError as exc:
            await _abort(context, exc)


def _speed(leaf: Leaf, update: gnmi.Update) -> int:
    """The speed in bit/s that an update of ``leaf`` sets."""
    value = scalar(update.val)
    where = show(update.path)
    got = text_format.MessageToString(update.val, as_one_line=True) or "no value"
    if leaf.kind == "port-speed":
        if isinstance(value, str):
            try:
                bps = speed_of(value)
            except SpeedError as exc:
                raise GnmiError("INVALID_ARGUMENT", f"{where}: {exc}") from None
            if bps is not None:
                return bps
        raise GnmiError(
            "INVALID_ARGUMENT",
            f"{where}: expected an OpenConfig speed such as SPEED_400GB, got {got}",
        )
    if isinstance(value, int) and value > 0:
        return value
    raise GnmiError("INVALID_ARGUMENT", f"{where}: expected a positive number of bit/s, got {got}")


def add_gnmi_service(server: grpc.aio.Server, interfaces: Interfaces) -> None:
    """Serve gNMI for ``interfaces`` on ``server`` (beside P4Runtime)."""
    gnmi_grpc.add_gNMIServicer_to_server(GnmiService(interfaces), server)
