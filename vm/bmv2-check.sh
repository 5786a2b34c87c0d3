#!/usr/bin/env bash
# In the VM lab: check that kv_fabric.p4 means the same thing to p4c/BMv2 as to kvfabric.
#  1. p4c-bm2-ss compiles the program (BMv2 JSON and P4Info);
#  2. kvfabric's P4Info is byte-identical to p4c's;
#  3. the fabric experiment runs on simple_switch_grpc (--switch bmv2).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bmv2
mkdir -p "$out"

echo "== p4c-bm2-ss"
p4c-bm2-ss --arch v1model p4/kv_fabric.p4 -o "$out/kv_fabric.json" \
    --p4runtime-files "$out/kv_fabric.p4c.p4info.txtpb"

echo "== P4Info: kvfabric compile against p4c"
.venv/bin/kvfabric compile p4/kv_fabric.p4 --p4runtime-files "$out/kv_fabric.kvfabric.p4info.txtpb"
if diff -u "$out/kv_fabric.p4c.p4info.txtpb" "$out/kv_fabric.kvfabric.p4info.txtpb"; then
    echo "P4Info identical"
else
    echo "P4Info differs (see the diff above)" >&2
    exit 1
fi

echo "== experiment on BMv2"
.venv/bin/kvfabric experiment --switch bmv2 \
    --p4info "$out/kv_fabric.p4c.p4info.txtpb" --p4blob "$out/kv_fabric.json" \
    --scenario topologies/scenarios/design-example.yaml --out results/bmv2-design-example
