"""Training-time calculator: exact arithmetic, inverse functions, validation messages, the widget's view."""

import matplotlib
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")

from scaledl.perf import hardware as hw  # noqa: E402
from scaledl.perf import training as T  # noqa: E402
from scaledl.perf import views as PV

EPS = 2.220446049250313e-16  # float64 machine epsilon; each function does a handful of roundings


def test_units():
    assert T.PETAFLOP_DAY_FLOP == 8.64e19
    assert T.TWO_WEEKS_S == 1_209_600


def test_time_by_hand():
    # 1 PF-day on one A100 (bf16 312 TFLOP/s) at 40 %: 8.64e19 / 124.8e12 s
    assert T.training_time_s(8.64e19, "A100", 1, 0.4, "bf16") == pytest.approx(8.64e19 / 124.8e12, rel=8 * EPS)
    assert T.training_time_days(8.64e19, "A100", 1, 0.4, "bf16") == pytest.approx(1e3 / 124.8, rel=8 * EPS)
    # perfect scaling: 8 GPUs take an eighth of the time
    one = T.training_time_s(1e20, "H100", 1, 0.5, "fp16")
    assert T.training_time_s(1e20, "H100", 8, 0.5, "fp16") == pytest.approx(one / 8, rel=8 * EPS)
    assert T.sustained_FLOPS("V100", 8, 0.5, "fp16") == 8 * 125e12 * 0.5


@given(flops=st.floats(1e10, 1e27), count=st.integers(1, 100_000), util=st.floats(0.01, 1.0),
       dev=st.sampled_from([d for d in hw.devices() if "fp32" in d.precisions]))
def test_trainable_flops_inverts_training_time(flops, count, util, dev):
    t = T.training_time_s(flops, dev, count, util, "fp32")
    assert T.trainable_flops(t, dev, count, util, "fp32") == pytest.approx(flops, rel=16 * EPS)


def test_devices_needed():
    work = T.trainable_flops(T.TWO_WEEKS_S, "A100", 8, 0.4, "bf16")
    assert T.devices_needed(work, "A100", T.TWO_WEEKS_S, 0.4, "bf16") == 8  # exact fit is not rounded up
    assert T.devices_needed(work * 1.01, "A100", T.TWO_WEEKS_S, 0.4, "bf16") == 9
    assert T.devices_needed(1.0, "A100", T.TWO_WEEKS_S, 0.4, "bf16") == 1


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"flops": -1.0}, ValueError, r"flops must be a positive number of floating-point operations, got -1.0"),
    ({"flops": 0}, ValueError, r"flops must be a positive.*got 0"),
    ({"flops": float("inf")}, ValueError, r"flops must be a positive.*got inf"),
    ({"flops": "1e20"}, TypeError, r"flops must be a number, got '1e20'"),
    ({"count": -4}, ValueError, r"count must be a positive int \(a number of GPUs\), got -4"),
    ({"count": 0}, ValueError, r"count must be a positive int.*got 0"),
    ({"count": 2.5}, TypeError, r"count must be a positive int.*got 2.5 \(float\)"),
    ({"utilization": 0.0}, ValueError, r"utilization must be in \(0, 1\] \(a fraction of peak\), got 0.0"),
    ({"utilization": 1.5}, ValueError, r"utilization must be in \(0, 1\].*got 1.5"),
    ({"utilization": 40}, ValueError, r"utilization must be in \(0, 1\].*got 40"),
    ({"device": "TPU v4"}, ValueError, r"device='TPU v4' is not in the hardware table; known devices:"),
    ({"device": "K80", "precision": "bf16"}, ValueError, r"precision='bf16': K80 has no published bf16 rate"),
    ({"precision": "fp12"}, ValueError, r"precision='fp12' is not one of"),
])
def test_validation(kwargs, exc, match):
    args = {"flops": 1e20, "device": "A100", "count": 8, "utilization": 0.4, "precision": "fp16"} | kwargs
    with pytest.raises(exc, match=match):
        T.training_time_s(**args)


def test_format_duration():
    assert T.format_duration(45) == "45 s"
    assert T.format_duration(3 * 3600) == "3 h"
    assert T.format_duration(12.5 * 86400) == "12.5 days"
    assert T.format_duration(400 * 86400) == "400 days"  # under two years stays in days
    assert T.format_duration(3 * 365.25 * 86400) == "3 years"
    assert T.format_duration(86400) == "1 day"  # singular when the printed number is exactly 1
    assert T.format_duration(1.004 * 86400) == "1 day"  # prints as 1 (3 significant digits)
    assert T.format_duration(1.5 * 86400) == "1.5 days"
    assert T.format_duration(3600) == "1 h" and T.format_duration(60) == "1 min"
    with pytest.raises(ValueError, match="time_s must be a positive duration"):
        T.format_duration(0)


def test_view_highlights_the_chosen_device_and_states_the_time():
    fig = PV.training_time_view(flops=8.64e19, device="A100", count=8, utilization=0.4, precision="best")
    ax = fig.axes[0]
    title = ax.get_title()
    # 8.64e19 / (8 x 312e12 x 0.4) s = 1000 / 998.4 days = 1.0016 days
    # one of each is singular: "1 PF-day ... 1 day", not "1 PF-days ... 1 days"
    assert title.startswith("8.64e+19 FLOP = 1 PF-day on 8 x A100 SXM4 80GB (bf16) at 40%: 1 day"), title
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(hw.devices())  # every device has a best training precision
    reds = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb("tab:red")]
    assert len(reds) == 1
    assert reds[0].get_width() == pytest.approx(1000 / 998.4, rel=8 * EPS)
    matplotlib.pyplot.close(fig)


def test_view_fixed_precision_leaves_out_devices_without_it():
    fig = PV.training_time_view(flops=1e21, device="K40", count=1, utilization=0.5, precision="bf16")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert all("(bf16)" in lab for lab in labels) and not any("K40" in lab for lab in labels)
    assert "K40 has no bf16 rate" in fig.axes[0].get_title()
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="precision='half' must be 'best' or one of"):
        PV.training_time_view(precision="half")
    with pytest.raises(ValueError, match="count must be a positive int"):
        PV.training_time_view(count=-1)
