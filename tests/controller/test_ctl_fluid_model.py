"""The fluid picture against a plain model of it: every flow settled and re-rated at
every event, one by one (what the picture's groups and marks must amount to)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.engine.fluid import VECTOR_MEMBERS, Fluid

PORTS = 5
AVAIL = [10e6, 20e6, 5e6, 40e6, 8e6]


class Model:
    """Each flow: its ports, bytes left, rate; all settled and re-rated at each event."""

    def __init__(self) -> None:
        self.flows: dict[int, tuple[tuple[int, ...], float]] = {}
        self.rates: dict[int, float] = {}
        self.at = 0.0
        self.done: dict[int, float] = {}

    def advance(self, now: float) -> None:
        for k, (ports, left) in self.flows.items():
            rate = self.rates[k]
            after = left - rate * (now - self.at) / 8.0
            if after <= 0.0 and k not in self.done:
                self.done[k] = min(now, self.at + 8.0 * left / rate) if left > 0 else self.at
            self.flows[k] = (ports, max(after, 0.0))
        self.at = now

    def rerate(self) -> None:
        counts = [0] * PORTS
        for ports, _ in self.flows.values():
            for p in ports:
                counts[p] += 1
        self.rates = {
            k: min(AVAIL[p] / counts[p] for p in ports) for k, (ports, _) in self.flows.items()
        }

    def add(self, k: int, ports: tuple[int, ...], nbytes: float, now: float) -> None:
        self.advance(now)
        self.flows[k] = (ports, nbytes)
        self.done.pop(k, None)
        self.rerate()

    def remove(self, k: int, now: float) -> float:
        self.advance(now)
        _, left = self.flows.pop(k)
        self.done.pop(k, None)
        self.rerate()
        return left

    def queued(self, port: int, nbytes: float, now: float) -> float:
        total = 0.0
        for k, (ports, left) in self.flows.items():
            if port in ports:
                b = left - self.rates[k] * (now - self.at) / 8.0
                total += min(max(b, 0.0), nbytes)
        return total


paths = st.sampled_from([(0, 1), (0, 2), (1, 2), (3, 4), (0, 3), (2,), (1, 2, 4)])
ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "remove", "burst"]),
        paths,
        st.floats(1e3, 5e6),
        st.floats(0.0, 0.2),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops=ops)
def test_the_picture_is_the_plain_model(
    ops: list[tuple[str, tuple[int, ...], float, float]],
) -> None:
    fluid, model = Fluid(list(AVAIL)), Model()
    now, next_key = 0.0, 1
    for kind, ports, nbytes, dt in ops:
        now += dt
        if kind == "remove" and model.flows:
            k = min(model.flows)
            assert fluid.remove(k, now) == pytest.approx(model.remove(k, now), rel=1e-6, abs=1e-3)
            continue
        # a burst: enough flows on one path for the group's marks to go to numpy
        for _ in range(VECTOR_MEMBERS + 2 if kind == "burst" else 1):
            fluid.add(next_key, ports, nbytes, now)
            model.add(next_key, ports, nbytes, now)
            next_key += 1
        look = now + dt / 2
        for p in range(PORTS):
            assert fluid.count(p) == sum(1 for q, _ in model.flows.values() if p in q)
            for size in (1e3, 1e6, math.inf):
                assert fluid.queued(p, size, look) == pytest.approx(
                    model.queued(p, size, look), rel=1e-6, abs=1e-3
                )
        for k in model.flows:
            assert fluid.rate(k) == pytest.approx(model.rates[k], rel=1e-9)
            assert fluid.left(k, now) == pytest.approx(model.flows[k][1], rel=1e-6, abs=1e-3)
            if k in model.done:
                assert fluid.expected_end(k, now) == pytest.approx(model.done[k], rel=1e-9)
