"""The chapter's service curves and the widget's model choice."""

import matplotlib
import pytest

from scaledl.perf.roofline import dense_layer, roofline_of
from scaledl.serve.models import llm_decode_service, rnn_service
from scaledl.serve.views import MODELS, service_model, serving_view

matplotlib.use("Agg")


def test_rnn_is_steps_times_its_layers_on_the_roofline():
    roof = roofline_of("GTX Titan X", "fp32")
    g = dense_layer(2 * 96, 96, 3, "fp32")
    want = 10 * 2 * roof.time_s(g.flops, g.bytes_moved)
    assert rnn_service(96, 2, 10)(3) == pytest.approx(want, rel=1e-12)


def test_batch_one_is_memory_bound_and_batching_is_nearly_free_until_the_ridge():
    s = rnn_service()
    assert s(16) < 1.1 * s(1)  # GEMV -> GEMM: 16x the work in under 1.1x the time (ridge ~39 in fp32)
    assert s(256) > 3 * s(1)   # well past the ridge the time grows with the batch
    d = llm_decode_service()
    assert d(2) > d(1)          # the KV cache is read per sequence: never free


def test_service_model_choices_and_errors():
    assert service_model("linear", 2.0, 0.5)(4) == pytest.approx(0.004)
    for m in MODELS:
        assert service_model(m)(1) > 0
    with pytest.raises(ValueError, match="model='cnn'; expected one of"):
        service_model("cnn")
    with pytest.raises(ValueError, match="hidden must be an int >= 1, got 0"):
        rnn_service(hidden=0)


def test_serving_view_on_a_roofline_model():
    fig = serving_view("batch_dispatch", slo_ms=200, model=MODELS[1], n_requests=3000)
    assert "RNN" in fig.axes[0].get_title()


def test_factor_table_rises_with_the_shared_share_and_tends_to_the_capacity_ratio():
    from scaledl.serve.views import capacity_ratio, factor_table

    rows = factor_table([0.5, 0.75, 0.9], [10, 2000], n_requests=5000)
    f = [r["factors"][0] for r in rows]
    assert f[0] < f[1] < f[2]
    for r in rows:  # a 2000x SLO is loose enough that both policies run within a few % of capacity
        assert r["factors"][1] == pytest.approx(r["loose_limit"], rel=0.05)
    assert capacity_ratio(0.003, 0.001, 64) == pytest.approx(64 * 0.004 / (0.003 + 0.064))
    assert capacity_ratio(0.001, 0.0, 8) == pytest.approx(8)
    with pytest.raises(ValueError, match=r"fixed_shares must lie in \(0, 1\), got 1"):
        factor_table([1], [10])
