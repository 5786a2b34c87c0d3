"""How big a request's KV cache is, and what a lab transfer stands for.

Size
----
A decoder keeps, per layer, one key and one value vector per KV head and token::

    bytes = 2 (K and V) x layers x KV heads x head dim x bytes per element x tokens

Grouped-query attention is what makes KV heads fewer than attention heads: Llama-3-70B
has 64 query heads but 8 KV heads, so 80 x 8 x 128 x 2 x 2 B = 320 KiB per token and
4,096 tokens = 1.34 GB in bf16 (0.67 GB in fp8). The presets carry each model's
published ``num_hidden_layers``, ``num_key_value_heads`` and head dimension
(``hidden_size / num_attention_heads``). Models with compressed latent attention
(DeepSeek's MLA) do not follow this formula and are not listed.

Scaling to the lab
------------------
The lab's links run at 10-20 Mb/s, not 400 Gb/s, so a run cannot replay real bytes.
What it can keep is the *shape* of the problem, as dimensionless ratios:

- transfer time / polling period: below 1, the controller never sees a transfer in
  its counters and must count its own placements (herding);
- transfer size / bandwidth-delay product: far above 1, transfers are elephants whose
  completion time is set by bandwidth, not latency;
- concurrent transfers / spines: how often transfers must share a spine.

A lab run dilates time by ``time_scale`` (lab seconds per real second). A real transfer
of ``B`` bytes at rate ``R`` lasts ``B/R``; in the lab it must last ``time_scale`` times
longer at the lab rate ``r``, so it carries ``B x (r/R) x time_scale`` bytes. By default
``time_scale`` is the lab's polling period over the real one, which keeps the first ratio.
The second cannot be kept (the lab's round trip through Python switches is
milliseconds, a data centre's is microseconds): both values are reported. The third
is the scenario's to keep. :class:`Scaling` reports all three, real and lab, and
:meth:`Scaling.describe` says in words what a run stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kvfabric.suggest import did_you_mean


class Dtype(StrEnum):
    """Element type of the cached keys and values."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"


BYTES_PER_ELEMENT: dict[Dtype, int] = {
    Dtype.FP32: 4,
    Dtype.BF16: 2,
    Dtype.FP16: 2,
    Dtype.FP8: 1,
    Dtype.INT8: 1,
}


@dataclass(frozen=True, slots=True)
class ModelShape:
    """The attention shape that sets a model's KV-cache size."""

    name: str
    layers: int
    kv_heads: int
    head_dim: int

    def bytes_per_token(self, dtype: Dtype = Dtype.BF16) -> int:
        """KV-cache bytes of one token: 2 x layers x KV heads x head dim x element size."""
        return 2 * self.layers * self.kv_heads * self.head_dim * BYTES_PER_ELEMENT[dtype]

    def kv_bytes(self, tokens: int, dtype: Dtype = Dtype.BF16) -> int:
        """KV-cache bytes of a request of ``tokens`` tokens."""
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        return self.bytes_per_token(dtype) * tokens


def _m(name: str, layers: int, kv_heads: int, head_dim: int) -> tuple[str, ModelShape]:
    return name, ModelShape(name, layers, kv_heads, head_dim)


PRESETS: dict[str, ModelShape] = dict(
    [
        # (layers, KV heads, head dim) from each model's published config.json.
        _m("llama-2-7b", 32, 32, 128),  # multi-head attention: no GQA
        _m("llama-2-70b", 80, 8, 128),
        _m("llama-3-8b", 32, 8, 128),
        _m("llama-3-70b", 80, 8, 128),
        _m("llama-3.1-405b", 126, 8, 128),
        _m("mistral-7b", 32, 8, 128),
        _m("mixtral-8x7b", 32, 8, 128),
        _m("mixtral-8x22b", 56, 8, 128),
        _m("qwen2-7b", 28, 4, 128),
        _m("qwen2-72b", 80, 8, 128),
    ]
)
_ALIASES = {
    "llama-3-405b": "llama-3.1-405b",
    "llama-3.1-8b": "llama-3-8b",
    "llama-3.1-70b": "llama-3-70b",
}


def preset(name: str) -> ModelShape:
    """The preset called ``name`` (case-insensitive); a KeyError guesses the name meant."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key in PRESETS:
        return PRESETS[key]
    hint = did_you_mean(key, [*PRESETS, *_ALIASES])
    raise KeyError(f"no model preset named {name!r}{hint} (known: {', '.join(PRESETS)})")


def kv_bytes(model: str | ModelShape, tokens: int, dtype: Dtype | str = Dtype.BF16) -> int:
    """KV-cache bytes of one request: ``kv_bytes("llama-3-70b", 4096) == 1_342_177_280``."""
    shape = preset(model) if isinstance(model, str) else model
    return shape.kv_bytes(tokens, Dtype(dtype))


# -- scaling -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setting:
    """Where transfers run: link rate, the controller's polling period and the RTT."""

    link_bps: float
    poll_interval_s: float
    rtt_s: float


@dataclass(frozen=True, slots=True)
class Ratios:
    """The dimensionless ratios that decide whether path choice can help."""

    transfer_over_poll: float
    size_over_bdp: float
    concurrency_over_spines: float


def ratios(nbytes: float, setting: Setting, concurrency: float, spines: int) -> Ratios:
    """The ratios of a transfer of ``nbytes`` in ``setting``."""
    transfer_s = nbytes * 8 / setting.link_bps
    bdp = setting.link_bps * setting.rtt_s / 8
    return Ratios(
        transfer_over_poll=transfer_s / setting.poll_interval_s,
        size_over_bdp=nbytes / bdp if bdp > 0 else float("inf"),
        concurrency_over_spines=concurrency / spines,
    )


@dataclass(frozen=True, slots=True)
class Scaling:
    """A real transfer and the lab transfer that stands for it."""

    real_bytes: int
    real: Setting
    lab_bytes: int
    lab: Setting
    time_scale: float
    real_ratios: Ratios
    lab_ratios: Ratios

    def real_seconds(self, lab_seconds: float) -> float:
        """The real-world duration a lab duration stands for."""
        return lab_seconds / self.time_scale

    def describe(self) -> list[str]:
        """What a run stands for, in words: one line per fact."""
        r, lab = self.real_ratios, self.lab_ratios
        return [
            f"a lab transfer of {format_bytes(self.lab_bytes)} at "
            f"{format_rate(self.lab.link_bps)} stands for {format_bytes(self.real_bytes)} at "
            f"{format_rate(self.real.link_bps)}",
            f"one lab second stands for {1000 / self.time_scale:.4g} ms of the real fabric",
            f"transfer time / polling period: real {r.transfer_over_poll:.3g}, "
            f"lab {lab.transfer_over_poll:.3g}",
            f"transfer size / bandwidth-delay product: real {r.size_over_bdp:.3g}, "
            f"lab {lab.size_over_bdp:.3g} (the lab's RTT cannot be made that of a data centre)",
            f"concurrent transfers / spines: {lab.concurrency_over_spines:.3g}",
        ]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for results.json."""

        def ratios_dict(x: Ratios) -> dict[str, float]:
            return {
                "transfer_time_over_poll": x.transfer_over_poll,
                "size_over_bdp": x.size_over_bdp,
                "concurrent_over_spines": x.concurrency_over_spines,
            }

        return {
            "real": {
                "bytes": self.real_bytes,
                "link_bps": self.real.link_bps,
                "poll_interval_s": self.real.poll_interval_s,
                "rtt_s": self.real.rtt_s,
                "transfer_s": self.real_bytes * 8 / self.real.link_bps,
            },
            "lab": {
                "bytes": self.lab_bytes,
                "link_bps": self.lab.link_bps,
                "poll_interval_s": self.lab.poll_interval_s,
                "rtt_s": self.lab.rtt_s,
                "transfer_s": self.lab_bytes * 8 / self.lab.link_bps,
            },
            "time_scale": self.time_scale,
            "ratios": {"real": ratios_dict(self.real_ratios), "lab": ratios_dict(self.lab_ratios)},
            "stands_for": self.describe(),
        }


def scale_to_lab(
    real_bytes: int,
    real: Setting,
    lab: Setting,
    *,
    concurrency: float,
    spines: int,
    time_scale: float | None = None,
    lab_bytes: int | None = None,
) -> Scaling:
    """The lab transfer that stands for ``real_bytes`` moved in ``real``.

    Give at most one of ``time_scale`` (lab seconds per real second) and ``lab_bytes``
    (the other follows); with neither, the time scale keeps transfer time / polling
    period (``lab.poll_interval_s / real.poll_interval_s``).
    """
    if time_scale is not None and lab_bytes is not None:
        raise ValueError("give time_scale or lab_bytes, not both")
    if real_bytes <= 0 or real.link_bps <= 0 or lab.link_bps <= 0:
        raise ValueError("bytes and link rates must be positive")
    rate_ratio = lab.link_bps / real.link_bps
    if lab_bytes is not None:
        scale = lab_bytes / (real_bytes * rate_ratio)
    else:
        scale = time_scale if time_scale is not None else lab.poll_interval_s / real.poll_interval_s
        lab_bytes = max(1, round(real_bytes * rate_ratio * scale))
    if scale <= 0:
        raise ValueError("the time scale must be positive")
    return Scaling(
        real_bytes=real_bytes,
        real=real,
        lab_bytes=lab_bytes,
        lab=lab,
        time_scale=scale,
        real_ratios=ratios(real_bytes, real, concurrency, spines),
        lab_ratios=ratios(lab_bytes, lab, concurrency, spines),
    )


# -- units ---------------------------------------------------------------------------


def format_bytes(n: float) -> str:
    """``'1.34 GB'``, ``'2 MB'``, ``'512 B'``: decimal prefixes, three significant digits."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {prefix}B"
    return f"{n:.0f} B"


def format_rate(bps: float) -> str:
    """``'400 Gb/s'``, ``'20 Mb/s'``."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {prefix}b/s"
    return f"{bps:.0f} b/s"
