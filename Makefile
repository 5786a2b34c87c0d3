# kvfabric: every target that needs the environment runs `setup` first (lint needs only `venv`).
# `setup` is idempotent: Debian packages (root), the project venv (.venv, which `venv` builds
# alone, without root) and the separate p4runtime-shell venv (.venv-p4rt, because
# p4runtime-shell pins protobuf < 3.21).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
P4RT_VENV := .venv-p4rt
APT_PACKAGES := mininet iperf3 iperf iputils-ping ethtool bridge-utils iproute2 tcpdump cpp prometheus chromium chromium-driver
MININET_DIR := /usr/lib/python3/dist-packages/mininet
STAMP := $(VENV)/.kvfabric-setup
VENV_STAMP := $(VENV)/.kvfabric-venv

.PHONY: setup venv test lint demo bench clean format stf tutorials

setup: $(STAMP)

# The project venv alone: all that lint needs, so `make lint` runs without root.
venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[all,dev]'
	@# Debian's mininet module serves the system python; expose only that package to the venv.
	@mkdir -p $(VENV)/mininet-site && ln -sfn $(MININET_DIR) $(VENV)/mininet-site/mininet
	@echo "$(abspath $(VENV))/mininet-site" > $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/kvfabric-mininet.pth
	@touch $@

$(STAMP): $(VENV_STAMP) pyproject.toml Makefile
	@missing=""; for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "setup: installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@# Debian's prometheus package starts a server on :9090 with its own config; kvfabric's
	@# tests run their own Prometheus (own config, ephemeral port), so the service is stopped
	@# and disabled, under systemd or sysvinit, and never left to conflict.
	@if [ -d /run/systemd/system ]; then \
	    systemctl disable --now prometheus.service >/dev/null 2>&1 || true; \
	elif [ -x /etc/init.d/prometheus ]; then \
	    /etc/init.d/prometheus stop >/dev/null 2>&1 || true; \
	    update-rc.d prometheus disable >/dev/null 2>&1 || true; \
	fi
	@test -x $(P4RT_VENV)/bin/python || $(PYTHON) -m venv $(P4RT_VENV)
	@$(P4RT_VENV)/bin/python -c 'import p4runtime_sh' 2>/dev/null || \
	    $(P4RT_VENV)/bin/python -m pip install -q --disable-pip-version-check p4runtime-shell==0.0.6
	@touch $@
	@echo "setup: done"

test: setup
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The main job: the design example and the collisions scenario on the emulated fabric
# (Mininet, root), every mode on identical traffic. Each prints its comparison table and
# validity verdict; exit status 3 from one means "ran, but the run is invalid" (reported,
# not hidden), so the demo fails only when a run could not be made at all.
DEMO_SCENARIOS := design-example collisions

demo: setup
	@status=0; for s in $(DEMO_SCENARIOS); do \
	    $(PY) -m kvfabric.cli experiment --scenario topologies/scenarios/$$s.yaml --out results/$$s; \
	    rc=$$?; if [ $$rc -ne 0 ] && [ $$rc -ne 3 ]; then status=$$rc; fi; \
	done; \
	for s in $(DEMO_SCENARIOS); do echo; echo "== $$s"; cat results/$$s/results.md 2>/dev/null; done; \
	exit $$status

# Every STF suite of the tree (p4/tests and tests/stf/programs) through the target.
stf: setup
	$(PY) -m tests.support.stf_suites

bench: setup
	$(PY) -m kvfabric.cli bench all

# p4lang/tutorials' exercises, unmodified, on kvfabric (root, Mininet): TUTORIALS is a checkout.
# Their Python packages live in a separate venv (protobuf < 3.21, as p4runtime-shell pins it),
# with PI's p4.tmp.p4config_pb2, which no PyPI package ships, and Debian's mininet.
TUTORIALS_VENV := .venv-tutorials
TUTORIALS_STAMP := $(TUTORIALS_VENV)/.kvfabric-setup

$(TUTORIALS_STAMP): Makefile kvfabric/tutorials/p4config_pb2.py
	@test -x $(TUTORIALS_VENV)/bin/python || $(PYTHON) -m venv $(TUTORIALS_VENV)
	@$(TUTORIALS_VENV)/bin/python -m pip install -q --disable-pip-version-check \
	    p4runtime-shell==0.0.6 scapy psutil
	@site=$$($(TUTORIALS_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	    mkdir -p $$site/p4/tmp && touch $$site/p4/tmp/__init__.py && \
	    cp kvfabric/tutorials/p4config_pb2.py $$site/p4/tmp/p4config_pb2.py && \
	    mkdir -p $(TUTORIALS_VENV)/mininet-site && \
	    ln -sfn $(MININET_DIR) $(TUTORIALS_VENV)/mininet-site/mininet && \
	    echo "$(abspath $(TUTORIALS_VENV))/mininet-site" > $$site/kvfabric-mininet.pth
	@touch $@

tutorials: setup $(TUTORIALS_STAMP)
	@test -n "$(TUTORIALS)" || { echo "usage: make tutorials TUTORIALS=DIR  (a checkout of p4lang/tutorials)"; exit 2; }
	@mkdir -p results
	$(PY) -m kvfabric.tutorials.runner $(TUTORIALS) --venv $(abspath $(TUTORIALS_VENV)) --report results/tutorials.md

clean:
	rm -rf $(VENV) $(P4RT_VENV) $(TUTORIALS_VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
