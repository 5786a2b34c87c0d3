"""The ports' speeds and statuses without a kernel: a sysfs of the test's own.

:class:`Interfaces` reads ``/sys/class/net``; here it reads a directory written by
the test, so every state a kernel can show (a veth's speed while down, an
``unknown`` operstate, a removed interface) is checked without root. The gNMI data
tree, ``--port-speed`` and the control channel's port commands read the same model.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from finsy.proto import gnmi

from softswitch.switch.argv import UsageError, parse_argv
from softswitch.switch.gnmi.service import GnmiService
from softswitch.switch.gnmi.tree import GnmiError, Tree, join, show
from softswitch.switch.interfaces import (
    Interfaces,
    OperStatus,
    SpeedError,
    link_names,
    parse_rate,
    speed_name,
    speed_of,
)
from softswitch.switch.main import port_speeds
from softswitch.switch.runtime_cli import CliError, RuntimeCli


def kernel(root: Path, name: str, **attrs: str) -> None:
    """Write ``/sys/class/net/NAME/ATTR`` files (attribute names with '_' for nothing)."""
    (root / name).mkdir(parents=True, exist_ok=True)
    for attr, text in attrs.items():
        (root / name / attr).write_text(text + "\n")


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    kernel(tmp_path, "eth1", speed="10000", operstate="up", carrier="1", flags="0x1003")
    kernel(tmp_path, "eth2", operstate="lowerlayerdown", flags="0x1003")  # no speed: down
    kernel(tmp_path, "eth3", operstate="unknown", carrier="1", flags="0x1002", speed="-1")
    return tmp_path


def test_rates_and_openconfig_speeds() -> None:
    assert parse_rate("400G") == parse_rate("400Gbps") == 400 * 10**9
    assert parse_rate("20Mbps") == 20_000_000 and parse_rate("2.5G") == 2_500_000_000
    assert parse_rate("SPEED_100GB") == parse_rate("openconfig-if-ethernet:SPEED_100GB")
    assert speed_name(10**11) == "SPEED_100GB" and speed_name(20_000_000) == "SPEED_UNKNOWN"
    assert speed_name(None) == "SPEED_UNKNOWN" and speed_of("SPEED_UNKNOWN") is None
    for bad in ("fast", "0", "1.5bps", "20MB", "SPEED_UNKNOWN", "SPEED_3GB"):
        with pytest.raises(SpeedError):
            parse_rate(bad)


def test_views_follow_the_kernel_unless_provisioned(sysfs: Path) -> None:
    ports = Interfaces([(2, "eth2"), (1, "eth1"), (3, "eth3"), (4, "gone")], {3: 20_000_000},
                       sysfs=sysfs)  # fmt: skip
    one, two, three, four = ports.views()
    assert (one.number, one.speed_bps, one.provisioned, one.oper_status, one.admin_up) == (
        1, 10**10, False, OperStatus.UP, True,
    )  # fmt: skip
    assert (two.speed_bps, two.oper_status) == (None, OperStatus.LOWER_LAYER_DOWN)
    assert (three.speed_bps, three.provisioned, three.admin_up) == (20_000_000, True, False)
    assert three.oper_status is OperStatus.UP  # operstate unknown: the carrier says
    assert four.oper_status is OperStatus.NOT_PRESENT and four.speed_bps is None
    calls: list[int] = []
    ports.listeners.append(lambda: calls.append(1))
    ports.set_speed(1, 400 * 10**9)
    assert ports.view(1).speed_bps == 400 * 10**9 and calls == [1]
    ports.set_speed(1, None)
    ports.set_speed(3, None)
    assert ports.view(1).speed_bps == 10**10  # the kernel's again
    assert ports.view(3).speed_bps == 20_000_000  # the command line's again
    with pytest.raises(SpeedError, match="no port 9"):
        ports.set_speed(9, 10**9)


def test_link_notifications_name_their_interfaces() -> None:
    def message(kind: int, name: bytes | None) -> bytes:
        attrs = b""
        if name is not None:
            payload = name + b"\0"
            attrs = struct.pack("=HH", 4 + len(payload), 3) + payload
            attrs += b"\0" * (-len(attrs) % 4)
        body = struct.pack("=BxHiII", 0, 1, 7, 0, 0) + attrs
        return struct.pack("=IHHII", 16 + len(body), kind, 0, 0, 0) + body

    assert link_names(message(16, b"eth1") + message(17, b"veth9")) == {"eth1", "veth9"}
    assert link_names(message(16, None)) is None  # no name: any port may have changed
    assert link_names(message(20, b"eth1")) == set()  # not a link message


def test_the_tree_selects_by_path_and_type(sysfs: Path) -> None:
    tree = Tree(Interfaces([(1, "eth1"), (2, "eth2")], sysfs=sysfs))

    def path(text: str) -> gnmi.Path:
        elems = []
        for part in filter(None, text.split("/")):
            name, _, key = part.partition("[")
            keys = dict([key.rstrip("]").split("=")]) if key else {}
            elems.append(gnmi.PathElem(name=name, key=keys))
        return join(None, gnmi.Path(elem=elems))

    state = tree.select(path("interfaces/interface[name=*]/state"))
    assert {leaf.kind for leaf in state} == {"name", "port", "admin-status", "oper-status"}
    assert len(tree.select(path("interfaces/interface"))) == len(tree.leaves)
    assert len(tree.select(gnmi.Path())) == len(tree.leaves)
    config = tree.select(path("interfaces"), gnmi.GetRequest.CONFIG)
    assert {leaf.kind for leaf in config} == {"name", "port-speed", "port-speed-bps"}
    values = dict(
        (show(leaf.path), v)
        for leaf, v in tree.values(tree.select(path("interfaces/*/ethernet/state")))
    )
    assert values["/interfaces/interface[name=eth1]/ethernet/state/port-speed"] == "SPEED_10GB"
    assert values["/interfaces/interface[name=eth2]/ethernet/state/port-speed-bps"] is None
    with pytest.raises(GnmiError, match="no data at /interfaces/interface"):
        tree.select(path("interfaces/interface[name=eth9]"))
    assert tree.select(path("interfaces/interface[name=*]/counters")) == []
    with pytest.raises(GnmiError, match="origin"):
        join(None, gnmi.Path(origin="cli"))


def test_a_set_is_all_or_nothing(sysfs: Path) -> None:
    ports = Interfaces([(1, "eth1"), (2, "eth2")], sysfs=sysfs)
    service = GnmiService(ports)

    def speed(name: str, leaf: str) -> gnmi.Path:
        elems = [gnmi.PathElem(name="interfaces"),
                 gnmi.PathElem(name="interface", key={"name": name}),
                 gnmi.PathElem(name="ethernet"), gnmi.PathElem(name="config"),
                 gnmi.PathElem(name=leaf)]  # fmt: skip
        return gnmi.Path(elem=elems)

    good = gnmi.Update(
        path=speed("eth1", "port-speed"), val=gnmi.TypedValue(string_val="SPEED_400GB")
    )
    bad = gnmi.Update(path=speed("eth2", "port-speed-bps"), val=gnmi.TypedValue(string_val="x"))
    with pytest.raises(GnmiError, match="positive number of bit/s"):
        service.set(gnmi.SetRequest(update=[good, bad]))
    assert ports.view(1).speed_bps == 10**10  # nothing applied
    json_bps = gnmi.TypedValue(json_val=b"25000000")
    answer = service.set(
        gnmi.SetRequest(
            update=[good, gnmi.Update(path=speed("eth2", "port-speed-bps"), val=json_bps)]
        )
    )
    assert [r.op for r in answer.response] == [gnmi.UpdateResult.UPDATE] * 2
    assert ports.view(1).speed_bps == 400 * 10**9 and ports.view(2).speed_bps == 25_000_000
    service.set(gnmi.SetRequest(delete=[speed("eth1", "port-speed")]))
    assert ports.view(1).speed_bps == 10**10


def test_port_speed_options() -> None:
    argv = ["-i", "1@a", "-i", "2@b", "--port-speed", "100G", "--port-speed", "2:20Mbps",
            "--port-speed", "openconfig-if-ethernet:SPEED_400GB", "--no-p4"]  # fmt: skip
    options = parse_argv(argv)
    assert options.port_speeds == ((None, 10**11), (2, 20_000_000), (None, 4 * 10**11))
    assert port_speeds(options) == {1: 4 * 10**11, 2: 20_000_000}
    with pytest.raises(UsageError, match="port 3 has no interface"):
        parse_argv(["-i", "1@a", "--port-speed", "3:1G", "--no-p4"])
    with pytest.raises(UsageError, match="--port-speed: expected a rate"):
        parse_argv(["-i", "1@a", "--port-speed", "1:quick", "--no-p4"])


def test_the_control_channel_shows_and_sets_speeds(sysfs: Path) -> None:
    ports = Interfaces([(1, "eth1"), (2, "eth2")], sysfs=sysfs)
    cli = RuntimeCli(lambda: None, queues=None, ports=ports)  # type: ignore[arg-type]
    shown = cli.run("show_ports")
    assert "eth1" in shown and "SPEED_10GB" in shown and "LOWER_LAYER_DOWN" in shown
    assert cli.run("set_port_speed 2 20Mbps") == "port 2 (eth2) at SPEED_UNKNOWN (20000000 b/s)"
    assert "20000000 b/s" in cli.run("show_ports")
    assert "SPEED_10GB" in cli.run("set_port_speed 2 SPEED_10GB")
    with pytest.raises(CliError, match="set_port_speed: "):
        cli.run("set_port_speed 2 quick")
    cli.run("set_port_speed 2 default")
    assert ports.view(2).speed_bps is None
