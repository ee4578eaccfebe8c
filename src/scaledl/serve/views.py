"""What chapter 17 shows: latency percentiles against load, users served at an SLO, and the widget's view.

>>> from scaledl.serve import linear
>>> rows = users_at_slo(linear(a_s=0.002, c_s=0.0005), slo_s=0.050, n_requests=20_000)
>>> [(r["policy"], round(r["max_rate_rps"]), round(r["vs_single"], 1)) for r in rows]
[('single', 364, 1.0), ('batch_dispatch', 1737, 4.8), ('dynamic', 1737, 4.8), ('adaptive', 1737, 4.8)]
"""

from __future__ import annotations

import numpy as np

from scaledl._args import positive
from scaledl.serve.service import linear
from scaledl.serve.simulate import POLICIES, simulate
from scaledl.serve.slo import capacity_rps, max_rate_at_slo


def _policy_options(policy: str, max_batch: int, slo_s: float, max_queue_delay_s: float) -> dict:
    if policy == "single":
        return {}
    if policy == "dynamic":
        return {"max_batch": max_batch, "max_queue_delay_s": max_queue_delay_s}
    if policy == "adaptive":
        return {"max_batch": max_batch, "latency_objective_s": slo_s}  # each batch's service held to the SLO
    return {"max_batch": max_batch}


def users_at_slo(service, slo_s: float, *, policies=POLICIES, max_batch: int = 64, max_queue_delay_s: float = 0.0,
                 percentile: float = 98.0, n_requests: int = 100_000, seed: int = 0) -> list[dict]:
    """For each policy: the largest arrival rate whose ``percentile`` latency meets ``slo_s``, and its ratio to
    ``"single"`` (the seed's "users at acceptable latency"). Rows: ``{"policy", "max_rate_rps", "vs_single"}``.
    """
    slo_s = positive("slo_s", slo_s)
    rates = {p: max_rate_at_slo(p, service=service, slo_s=slo_s, percentile=percentile, n_requests=n_requests,
                                seed=seed, **_policy_options(p, max_batch, slo_s, max_queue_delay_s))
             for p in policies}
    base = rates.get("single") or max_rate_at_slo("single", service=service, slo_s=slo_s, percentile=percentile,
                                                  n_requests=n_requests, seed=seed)
    return [{"policy": p, "max_rate_rps": r, "vs_single": r / base if base > 0 else float("inf")}
            for p, r in rates.items()]


def percentile_curves(policy: str, service, rates_rps, *, n_requests: int = 50_000, seed: int = 0,
                      **policy_options) -> dict:
    """p50, p98 and p99 latency (seconds) and mean batch at each rate: ``{"p50_s": array, ...}``."""
    rows = [simulate(policy, rate=float(r), service=service, n_requests=n_requests, seed=seed, **policy_options)
            for r in rates_rps]
    return {"rate_rps": np.asarray(rates_rps, float), "p50_s": np.array([r.p50_s for r in rows]),
            "p98_s": np.array([r.p98_s for r in rows]), "p99_s": np.array([r.p99_s for r in rows]),
            "mean_batch": np.array([r.mean_batch for r in rows])}


MODELS = ("linear", "RNN (Titan X)", "LLM decode (H100)")


def service_model(model: str, fixed_ms: float = 2.0, per_request_ms: float = 0.5):
    """The widget's service curves: ``"linear"`` (``fixed_ms + per_request_ms x b``) or one of
    :mod:`scaledl.serve.models`' rooflines (which ignore ``fixed_ms`` and ``per_request_ms``)."""
    from scaledl.serve.models import llm_decode_service, rnn_service

    if model == "linear":
        return linear(positive("fixed_ms", fixed_ms) / 1e3, per_request_ms / 1e3)
    if model == MODELS[1]:
        return rnn_service()
    if model == MODELS[2]:
        return llm_decode_service()
    raise ValueError(f"model={model!r}; expected one of {MODELS}")


def serving_view(policy: str = "batch_dispatch", slo_ms: float = 50.0, max_batch: int = 64,
                 fixed_ms: float = 2.0, per_request_ms: float = 0.5, max_queue_delay_ms: float = 0.0,
                 n_requests: int = 20_000, model: str = "linear"):
    """Widget view: p50/p98/p99 latency against load for ``policy`` and for ``"single"`` on the service curve
    ``model`` (:func:`service_model`), with the SLO drawn and the users served at it in the title."""
    import matplotlib.pyplot as plt

    service = service_model(model, fixed_ms, per_request_ms)
    slo_s = positive("slo_ms", slo_ms) / 1e3
    opts = _policy_options(policy, max_batch, slo_s, max_queue_delay_ms / 1e3)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    served = {}
    for name, o, style in (("single", {}, "--"), (policy, opts, "-")):
        top = capacity_rps(name, service, **o)
        rates = top * np.linspace(0.05, 0.98, 24)
        c = percentile_curves(name, service, rates, n_requests=n_requests, **o)
        for q, color in (("p50_s", "C0"), ("p98_s", "C3"), ("p99_s", "C1")):
            ax.semilogy(rates, c[q] * 1e3, style, color=color, label=f"{name} {q[:3]}")
        served[name] = max_rate_at_slo(name, service=service, slo_s=slo_s, n_requests=n_requests, **o)
        if name == policy:
            break
    ax.axhline(slo_ms, color="k", lw=1, ls=":", label=f"SLO {slo_ms:g} ms (p98)")
    ratio = served[policy] / served["single"] if served["single"] > 0 else float("inf")
    ax.set_title(f"{model}, {policy}: {served[policy]:.0f} req/s at p98 <= {slo_ms:g} ms "
                 f"vs single {served['single']:.0f} ({ratio:.1f}x)", fontsize=10)
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("latency (ms)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def capacity_ratio(a_s: float, c_s: float, max_batch: int) -> float:
    """Eager batching's capacity over one-at-a-time's for service ``a + c b``: ``B (a + c) / (a + c B)``.

    What the ratio of "users at acceptable latency" tends to as the SLO loosens: full batches back to back
    against single requests back to back. (At a tighter SLO the ratio can be larger: one-at-a-time then
    runs far below its capacity, while batching stays near its own.) It tends to ``1 + a / c`` for a large
    cap and to ``B`` for ``c = 0``.
    """
    svc = linear(a_s, c_s)
    return capacity_rps("batch_dispatch", svc, max_batch=max_batch) / capacity_rps("single", svc)


def factor_table(fixed_shares, slo_multiples, *, max_batch: int = 64, service_1_s: float = 0.001,
                 percentile: float = 98.0, n_requests: int = 20_000, seed: int = 0) -> list[dict]:
    """Users at the SLO with batch dispatch over one-at-a-time, for linear services of the same batch-1 time.

    Each row is one service ``a + c b`` with ``a + c = service_1_s`` and ``a / (a + c)`` = a value of
    ``fixed_shares`` (the share of a batch of one's time that a batch shares: weight reads, launches).
    Row: ``{"fixed_share", "a_over_c", "factors": [one per SLO multiple of service_1_s], "loose_limit"}``
    (``loose_limit``: :func:`capacity_ratio`, the factor as the SLO loosens).
    """
    positive("service_1_s", service_1_s)
    rows = []
    for share in fixed_shares:
        if not 0 < share < 1:
            raise ValueError(f"fixed_shares must lie in (0, 1), got {share!r}")
        a_s, c_s = share * service_1_s, (1 - share) * service_1_s
        svc = linear(a_s, c_s)
        factors = []
        for k in slo_multiples:
            slo = positive("slo_multiples", k) * service_1_s
            one = max_rate_at_slo("single", service=svc, slo_s=slo, percentile=percentile, n_requests=n_requests,
                                  seed=seed)
            bd = max_rate_at_slo("batch_dispatch", service=svc, slo_s=slo, percentile=percentile,
                                 n_requests=n_requests, seed=seed, max_batch=max_batch)
            factors.append(bd / one if one > 0 else float("inf"))
        rows.append({"fixed_share": float(share), "a_over_c": a_s / c_s, "factors": factors,
                     "loose_limit": capacity_ratio(a_s, c_s, max_batch)})
    return rows
