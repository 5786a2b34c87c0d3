"""simple_switch_grpc's command-line grammar."""

from __future__ import annotations

import pytest

from softswitch.switch.argv import SwitchOptions, TlsOptions, UsageError, parse_argv


def test_defaults_are_bmv2s() -> None:
    opts = parse_argv(["prog.p4"])
    assert opts == SwitchOptions(program="prog.p4")
    assert opts.grpc_addr == "0.0.0.0:9559"
    assert opts.device_id == 0
    assert opts.drop_port == 511
    assert opts.cpu_port is None


def test_tutorials_launcher_command_line() -> None:
    # p4lang/tutorials' P4RuntimeSwitch builds exactly this shape.
    argv = [
        "-i", "1@s1-eth1", "-i", "2@s1-eth2", "--pcap", "--log-console", "-L", "debug",
        "--device-id", "0", "build/basic.json", "--thrift-port", "9090",
        "--", "--grpc-server-addr", "0.0.0.0:50051", "--cpu-port", "255",
    ]  # fmt: skip
    opts = parse_argv(argv)
    assert opts.interfaces == ((1, "s1-eth1"), (2, "s1-eth2"))
    assert opts.pcap_dir == "."
    assert opts.log_console and opts.log_level == "debug"
    assert opts.program == "build/basic.json"
    assert opts.grpc_addr == "0.0.0.0:50051"
    assert opts.cpu_port == 255
    assert opts.thrift_port == 9090  # the control channel of simple_switch_CLI
    assert opts.warnings == ()


def test_equals_forms_and_options_after_the_program() -> None:
    opts = parse_argv(
        [
            "--no-p4",
            "--device-id=7",
            "--interface=3@eth0",
            "--pcap=/tmp",
            "--log-file=x.log",
            "--",
            "--drop-port=100",
            "--grpc-server-addr=127.0.0.1:1",
        ]
    )
    assert opts.no_p4 and opts.program is None
    assert (opts.device_id, opts.interfaces, opts.pcap_dir) == (7, ((3, "eth0"),), "/tmp")
    assert (opts.log_file, opts.drop_port, opts.grpc_addr) == ("x.log", 100, "127.0.0.1:1")


def test_pcap_takes_an_existing_directory_but_not_the_program(tmp_path: object) -> None:
    assert parse_argv(["--pcap", str(tmp_path), "p.p4"]).pcap_dir == str(tmp_path)
    opts = parse_argv(["--pcap", "p.p4"])
    assert (opts.pcap_dir, opts.program) == (".", "p.p4")


def test_queue_options_per_port_and_global() -> None:
    opts = parse_argv(["--queue-rate", "1:1000", "--queue-rate=50", "--queue-depth", "2:16", "p"])
    assert opts.queue_rates == ((1, 1000), (None, 50))
    assert opts.queue_depths == ((2, 16),)


def test_tls_options() -> None:
    opts = parse_argv(
        [
            "p",
            "--",
            "--grpc-server-ssl",
            "--grpc-server-cert",
            "c.pem",
            "--grpc-server-key=k.pem",
            "--grpc-server-cacert",
            "ca.pem",
            "--grpc-server-with-client-auth",
        ]
    )
    assert opts.tls == TlsOptions("c.pem", "k.pem", "ca.pem", True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "a program is required, or --no-p4"),
        (["a.p4", "b.p4"], "only one program may be given"),
        (["--no-p4", "a.p4"], "exclude each other"),
        (["-i", "eth0", "p"], "expected PORT@IFACE"),
        (["-i", "x@eth0", "p"], "expected an integer"),
        (["-i", "1@a", "-i", "1@b", "p"], "port 1 is given twice"),
        (["--device-id"], "needs a value"),
        (["--bogus", "p"], "unknown option --bogus"),
        (["-L", "loud", "p"], "level must be one of"),
        (["p", "--", "--cpu-port", "600"], "out of range"),
        (["p", "--", "--grpc-server-addr", "nohostport"], "expected HOST:PORT"),
        (["p", "--", "stray"], "unexpected argument"),
        (["p", "--", "--grpc-server-ssl"], "needs --grpc-server-cert"),
        (["p", "--", "--grpc-server-cert", "c"], "needs --grpc-server-ssl"),
        (["--log-console", "--log-file", "f", "p"], "exclude each other"),
        (["--no-p4=1"], "takes no value"),
        (["--offloads", "maybe", "p"], "disable, refuse or keep"),
    ],
)
def test_bad_command_lines(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_argv(argv)


def test_help_short_circuits() -> None:
    assert parse_argv(["--help"]).show_help
    assert parse_argv(["-v"]).show_version


def test_priority_queues_are_taken_without_warning() -> None:
    assert parse_argv(["p.p4"]).priority_queues == 1
    opts = parse_argv(["p.p4", "--", "--priority-queues", "4"])
    assert opts.priority_queues == 4
    assert opts.warnings == ()
    with pytest.raises(UsageError, match="out of range"):
        parse_argv(["p.p4", "--", "--priority-queues", "9"])
