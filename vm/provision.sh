#!/usr/bin/env bash
# Provision the VM lab (Ubuntu 22.04): p4lang's packages of p4c and BMv2, Mininet,
# iperf3, and kvfabric's own environment (make setup).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

. /etc/os-release
repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
if [ ! -f /etc/apt/sources.list.d/home-p4lang.list ]; then
    apt-get update -qq
    apt-get install -y -qq curl gnupg ca-certificates
    echo "deb ${repo}/ /" > /etc/apt/sources.list.d/home-p4lang.list
    curl -fsSL "${repo}/Release.key" | gpg --dearmor > /etc/apt/trusted.gpg.d/home-p4lang.gpg
fi
apt-get update -qq
apt-get install -y -qq p4lang-p4c p4lang-bmv2 mininet iperf3 ethtool bridge-utils \
    python3-venv python3-pip make cpp tcpdump

for tool in p4c-bm2-ss simple_switch_grpc; do
    if ! command -v "$tool" >/dev/null; then
        echo "provision: $tool is missing after installing p4lang's packages" >&2
        exit 1
    fi
done

cd /kvfabric
make setup PYTHON=python3
echo "provision: done; run 'sudo vm/bmv2-check.sh' in /kvfabric"
