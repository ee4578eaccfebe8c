"""The DGX POD, Saturn V and accelerator arithmetic of chapter 19 against the numbers the slides print."""

import pytest

from scaledl.perf import cluster as c
from scaledl.perf import views as PV


def test_pod_rack_units_and_power_fit_the_rack():
    lo, hi = c.DGX1_POD.rack_units
    assert (lo, hi) == (9 * 3 + 12 + 1 + 1, 9 * 3 + 12 + 1 + 2) and hi <= c.DGX1_POD.rack_height_RU  # 42 RU rack
    assert c.DGX2_POD.rack_units == (3 * 10 + 12 + 1 + 1, 3 * 10 + 12 + 1 + 2)
    assert c.DGX2_POD.rack_units[1] <= c.DGX2_POD.rack_height_RU  # 48 RU rack
    assert c.DGX1_POD.server_power_kW == pytest.approx(31.5) and c.DGX2_POD.server_power_kW == pytest.approx(30.0)
    assert c.DGX1_POD.server_power_kW < 35 and c.DGX2_POD.server_power_kW < 35


def test_experiment_hours_and_developers():
    assert c.experiment_hours(500_000) == pytest.approx(500_000 * 120 / 480 / 3600)  # 34.72 h
    assert c.experiment_hours(300_000) == pytest.approx(20.833, abs=1e-3)
    assert c.developers_per_pod(c.DGX1_POD, 1) == pytest.approx(4.5)   # "five developers"
    assert c.developers_per_pod(c.DGX2_POD, 0.5) == pytest.approx(3.0)  # "at least three"
    with pytest.raises(ValueError, match="images must be a positive finite number, got -1"):
        c.experiment_hours(-1)
    with pytest.raises(ValueError, match="server_days_per_experiment must be a positive finite number, got 0"):
        c.developers_per_pod(c.DGX1_POD, 0)


def test_saturn_v_and_dgx2():
    assert c.SATURN_V.gpus == 5280 and c.SATURN_V.fp16_tensor_PFLOPS == pytest.approx(660)
    assert c.DGX2.fp16_tensor_PFLOPS == pytest.approx(2.0) and c.DGX1.fp16_tensor_PFLOPS == pytest.approx(1.0)


def test_input_bandwidth_and_amortisation():
    assert c.input_bandwidth_MBps(480, 500e3) == pytest.approx(240.0)
    assert c.TEN_GBE_MBps == pytest.approx(1250.0)
    assert c.overhead_share(250, 0.032) == pytest.approx(250 / 250.032)
    n = c.ops_to_amortise(250, 0.032)  # overhead <= half: n * 0.032 >= 250
    assert n * 0.032 >= 250 > (n - 1) * 0.032
    with pytest.raises(ValueError, match="target_share must be in \\(0, 1\\), got 1"):
        c.ops_to_amortise(1, 1, 1)
    with pytest.raises(TypeError, match="tops must be a number, got '1'"):
        c.tops_per_W("1", 1)


def test_literature_ratios_are_below_the_100x_claim():
    from scaledl.perf import accelerators as acc

    for r in acc.KUON_ROSE:
        assert r.area < acc.TALK_FPGA_OVER_ASIC and r.dynamic_power < acc.TALK_FPGA_OVER_ASIC
        assert r.area_with_hard_blocks < r.area


def test_view_pod():
    text = PV.view_pod(images=500_000)
    assert "34.7 h" in text and "4.5 developers" not in text  # 1.45 server-days per experiment
    assert "3.1 developers" in text
    assert "20.8 h" in PV.view_pod() and "5.2 developers" in PV.view_pod() and "experiment/day' holds" in PV.view_pod()
    assert "experiment/day' fails" in text
    dgx2 = PV.view_pod(pod="DGX-2")
    assert "10.4 h" in dgx2 and "3.5 developers" in dgx2 and "2 experiments/day' holds" in dgx2
    with pytest.raises(ValueError, match="pod='DGX-3'; expected 'DGX-1' or 'DGX-2'"):
        PV.view_pod(pod="DGX-3")


def test_the_pod_explorers_rate_label_follows_the_pod():
    # the slider is one DGX-1's rate; with a DGX-2 chosen the output runs at twice it, and the label says so
    assert PV.view_pod_labels() == {"images_per_s": "images/s per DGX-1"}
    assert "DGX-2 runs at twice it" in PV.view_pod_labels(pod="DGX-2", images_per_s=480)["images_per_s"]
    assert "at 960 images/s (twice 480 per DGX-1) = 10.4 h" in PV.view_pod(pod="DGX-2")
    assert "at 480 images/s = 20.8 h" in PV.view_pod()  # the DGX-1 line as the chapter prints it
    from scaledl.widgets import Explorer, choice, log_slider

    ex = Explorer(PV.view_pod, describe=PV.view_pod_labels,
                  images_per_s=log_slider(480, 50, 5000, description="images/s per DGX-1"),
                  pod=choice(["DGX-1", "DGX-2"], "DGX-1", description="POD"))
    ex.controls["pod"].value = "DGX-2"
    assert ex.controls["images_per_s"].description == "images/s per DGX-1 (a DGX-2 runs at twice it)"
    assert "960 images/s" in ex.render()
    ex.controls["pod"].value = "DGX-1"
    assert ex.controls["images_per_s"].description == "images/s per DGX-1"
    with pytest.raises(ValueError, match="pod='DGX-3'; expected 'DGX-1' or 'DGX-2'"):
        PV.view_pod_labels(pod="DGX-3")
