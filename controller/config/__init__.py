"""The fabric file: one YAML document that the controller and the labs all read.

A fabric is switches (leaves and spines, each with its P4Runtime address), hosts (each
on a leaf port, with its addresses and the pool it serves: prefill, decode or other),
the links between leaves and spines with their capacities, and the controller's
settings. An example::

    name: lab-2x2
    switches:
      - {name: leaf1, role: leaf, p4runtime: 127.0.0.1:50001, device_id: 1}
      - {name: spine1, role: spine, p4runtime: 127.0.0.1:50003, device_id: 3}
    hosts:
      - {name: h1, leaf: leaf1, port: 1, ipv4: 10.0.1.1/24, mac: "08:00:00:00:01:01",
         pool: prefill, capacity: 20Mbps}
    links:
      - {a: {switch: leaf1, port: 3}, b: {switch: spine1, port: 1}, capacity: 20Mbps}
    controller:
      telemetry: {poll_interval: 100ms, staleness_limit: 500ms}
      api: {bind: 127.0.0.1:8080}
      scheduling: {policy: srpt, max_wait: 50ms, batch_max_wait: 1s}

Loading validates everything once, so the rest of kvfabric can trust the model:

1. *shape*: every mapping has exactly its keys (unknown keys fail with a guess of
   the key meant), every scalar has its type and range (``located``);
2. *references*: a host's leaf exists and is a leaf, link ends exist, no port is used
   twice, names, IPs, MACs and P4Runtime targets are unique, and every leaf has
   exactly one link to every spine (``checks``).

The first problem found is raised as a :class:`ConfigError` naming the file, the key
path and the line: ``fabric.yaml:14:15: links[3].a.port: expected an integer 1..510,
got 'x'``. The result is a tree of frozen dataclasses. p4lang/tutorials'
``topology.json`` files load into the same model (``tutorials``), and fabrics
can be built from parameters (``generate``).

The package's modules, in the order a file goes through them:

- ``located``: the YAML document as located nodes, and the typed readers of values
  (also used by the lab's scenario and sweep files);
- ``units``: capacities, durations, fractions;
- ``sections``: one parser per section of the file, returning the model;
- ``checks``: cross-reference checks over the parsed model;
- ``tutorials``: p4lang/tutorials' ``topology.json`` into the same model;
- ``load``: ``load_config`` and ``parse_config``, the entry points;
- ``model``: the frozen dataclasses (no parsing, so nothing imports a loader back);
- ``generate``: fabrics from parameters, and back to YAML.
"""

from __future__ import annotations

from controller.config.load import load_config, parse_config
from controller.config.model import (
    MAX_PORT,
    MAX_WAIT_LIMIT_S,
    AlertSettings,
    ApiSettings,
    ControllerSettings,
    FabricConfig,
    HostConfig,
    KvClassSettings,
    LinkConfig,
    LinkEnd,
    Mode,
    Policy,
    Pool,
    Role,
    SafetySettings,
    SchedulingSettings,
    SelectionSettings,
    SwitchConfig,
    TelemetrySettings,
    TlsSettings,
)

__all__ = [
    "MAX_PORT",
    "MAX_WAIT_LIMIT_S",
    "AlertSettings",
    "ApiSettings",
    "ControllerSettings",
    "FabricConfig",
    "HostConfig",
    "KvClassSettings",
    "LinkConfig",
    "LinkEnd",
    "Mode",
    "Policy",
    "Pool",
    "Role",
    "SafetySettings",
    "SchedulingSettings",
    "SelectionSettings",
    "SwitchConfig",
    "TelemetrySettings",
    "TlsSettings",
    "load_config",
    "parse_config",
]
