"""The hardware table: every entry cited and sane, derived quantities computed right, clear errors."""

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaledl.perf import hardware as hw

ALL = hw.devices()


def test_every_entry_is_cited_and_named_once():
    assert len({d.name for d in ALL}) == len(ALL)
    for d in ALL:
        assert len(d.citation) > 15, d.name
        assert any(word in d.citation for word in ("datasheet", "specifications")), d.name


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_units_are_sane(d):
    # GB/s, GB, W, TFLOP/s: catches a value typed in the wrong unit (e.g. TB/s or MB)
    assert 100 <= d.memory_bandwidth_GBps <= 10_000
    assert 1 <= d.memory_GB <= 200
    assert 50 <= d.power_W <= 1000
    assert 2010 <= d.year <= 2025
    assert 1 <= d.fp32_TFLOPS <= 100
    if d.fp64_TFLOPS is not None:
        assert d.fp64_TFLOPS <= d.fp32_TFLOPS
    for p in d.precisions:
        if p != "fp64":  # narrower formats are never slower than fp32
            assert d.peak_TFLOPS(p) >= d.fp32_TFLOPS


def test_generations_in_order_and_covered():
    years = [d.year for d in ALL]
    assert years == sorted(years)
    archs = {d.architecture for d in ALL}
    assert {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Hopper"} <= archs
    for name in ("K40", "K80", "GTX Titan X", "P100", "V100", "T4", "A100", "H100 SXM", "H200"):
        hw.get(name)


def test_datasheet_values_spot_checks():
    # exact figures as printed in the datasheets (dense; Hopper's are half the printed sparse ones)
    assert hw.get("V100").fp16_TFLOPS == 125.0 and hw.get("V100").memory_bandwidth_GBps == 900
    assert hw.get("A100").peak_TFLOPS("bf16", sparse=True) == 624.0
    assert hw.get("A100").peak_TFLOPS("int8", sparse=True) == 1248.0
    h100 = hw.get("H100 SXM")
    assert h100.peak_TFLOPS("tf32", sparse=True) == 989.0
    assert h100.peak_TFLOPS("fp8", sparse=True) == 3958.0
    assert (h100.memory_GB, h100.memory_bandwidth_GBps, h100.power_W) == (80, 3350, 700)
    h200 = hw.get("H200")
    assert h200.peak_TFLOPS("fp16") == h100.peak_TFLOPS("fp16") and h200.memory_GB == 141


def test_tensor_core_and_sparsity_flags():
    assert not any(d.tensor_core for d in ALL if d.architecture in ("Fermi", "Kepler", "Maxwell", "Pascal"))
    assert hw.get("V100").tensor_core == {"fp16"}
    assert all(d.sparse_2to4 == (d.architecture in ("Ampere", "Hopper")) for d in ALL)
    with pytest.raises(ValueError, match="sparse=True: V100 SXM2 has no 2:4 sparse fp16"):
        hw.get("V100").peak_TFLOPS("fp16", sparse=True)
    with pytest.raises(ValueError, match="no 2:4 sparse fp32"):  # fp32 runs on CUDA cores: no sparsity
        hw.get("A100").peak_TFLOPS("fp32", sparse=True)


def test_ridge_point_by_hand():
    # H100 SXM fp16: 989.5e12 FLOP/s / 3350e9 B/s
    assert hw.get("H100 SXM").ridge_point_FLOP_per_byte("fp16") == pytest.approx(989.5e12 / 3350e9, rel=1e-15)
    # V100: 125 TFLOP/s / 900 GB/s = 138.9 FLOP/byte; fp32 15.7 / 900 = 17.4
    assert hw.get("V100").ridge_point_FLOP_per_byte("fp16") == pytest.approx(138.888888, rel=1e-6)
    assert hw.get("V100").ridge_point_FLOP_per_byte("fp32") == pytest.approx(17.444444, rel=1e-6)
    # same die, more bandwidth: the H200's ridge point is lower by exactly the bandwidth ratio
    r = hw.get("H100 SXM").ridge_point_FLOP_per_byte("bf16") / hw.get("H200").ridge_point_FLOP_per_byte("bf16")
    assert r == pytest.approx(4800 / 3350, rel=1e-15)


@given(st.sampled_from(ALL), st.data())
def test_ridge_times_bandwidth_is_peak(d, data):
    p = data.draw(st.sampled_from(d.precisions))
    # two roundings of float64 at most: rel 4 eps
    assert d.ridge_point_FLOP_per_byte(p) * d.memory_bandwidth_GBps * 1e9 == pytest.approx(
        d.peak_TFLOPS(p) * 1e12, rel=4 * 2.2e-16)
    assert d.efficiency_TFLOPS_per_W(p) * d.power_W == pytest.approx(d.peak_TFLOPS(p), rel=4 * 2.2e-16)


def test_seed_002_tops_per_watt():
    # "9 teraOPS/watt": not the SXM part at 700 W (5.65 sparse), close to the PCIe part at 350 W (8.65)
    assert hw.get("H100 SXM").efficiency_TFLOPS_per_W("int8", sparse=True) == pytest.approx(3958 / 700)
    assert hw.get("H100 PCIe").efficiency_TFLOPS_per_W("fp8", sparse=True) == pytest.approx(3026 / 350)


def test_best_training_precision():
    assert hw.get("K40").best_training_precision == "fp32"
    assert hw.get("P100").best_training_precision == "fp16"
    assert hw.get("A100").best_training_precision == "bf16"  # tie with fp16 goes to bf16
    assert hw.get("P40").best_training_precision == "fp32"  # int8 is not a training precision


def test_get_errors_and_aliases():
    assert hw.get("a100") is hw.get("A100 SXM4 80GB") is hw.get(" A100 ")
    d = hw.get("T4")
    assert hw.get(d) is d
    with pytest.raises(ValueError, match=r"device='B200' is not in the hardware table; known devices: GTX 580, K20X"):
        hw.get("B200")
    with pytest.raises(TypeError, match="device must be a device name"):
        hw.get(100)
    with pytest.raises(ValueError, match=r"precision='fp16': K40 has no published fp16 rate; it has fp64, fp32"):
        hw.get("K40").peak_TFLOPS("fp16")
    with pytest.raises(ValueError, match=r"precision='fp4' is not one of"):
        hw.get("H100").peak_TFLOPS("fp4")


def test_devices_are_frozen_and_validated():
    d = hw.get("T4")
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.power_W = 1
    with pytest.raises(ValueError, match="fp32 rate must be a positive number or None"):
        dataclasses.replace(d, fp32_TFLOPS=-1.0)
    with pytest.raises(ValueError, match="tensor_core lists"):
        dataclasses.replace(d, tensor_core=frozenset({"bf16"}))
    with pytest.raises(ValueError, match="needs a citation"):
        dataclasses.replace(d, citation=" ")
    with pytest.raises(ValueError, match="memory_bandwidth_GBps must be > 0"):
        dataclasses.replace(d, memory_bandwidth_GBps=0)
    assert math.isfinite(d.efficiency_TFLOPS_per_W("int8"))


def test_variants_are_found_by_name_but_kept_out_of_the_chip_table():
    pcie, a40 = hw.get("P100 PCIe"), hw.get("A100 40GB")
    assert pcie in hw.VARIANTS and a40 in hw.VARIANTS
    assert pcie not in hw.devices() and pcie.name not in hw.names()
    # the same chip as its table entry: the PCIe card at lower clocks, the 40 GB part with less bandwidth
    assert pcie.chip == hw.get("P100").chip and pcie.fp32_TFLOPS < hw.get("P100").fp32_TFLOPS
    assert (pcie.fp64_TFLOPS, pcie.fp32_TFLOPS, pcie.fp16_TFLOPS) == (4.7, 9.3, 18.7)
    assert a40.fp16_TFLOPS == hw.get("A100").fp16_TFLOPS and a40.memory_bandwidth_GBps == 1555
    with pytest.raises(ValueError, match="known devices: .*P100 PCIe 16GB"):
        hw.get("P100 PCIe 12GB")


def test_gh100_rates_are_quoted_at_two_clocks():
    """The H100/H200 datasheet quotes FP32 at the 1.98 GHz boost clock and the tensor cores at 1.83 GHz (the
    whitepaper's figures per SM per clock); on one clock the tensor cores are 8x (TF32) and 16x (FP16) FP32."""
    for name in ("H100 SXM", "H200 SXM"):
        assert hw.quoted_clock_GHz(name, "fp32") == pytest.approx(1.98, abs=0.005)
        for p in ("tf32", "fp16", "bf16", "fp8", "int8"):
            assert hw.quoted_clock_GHz(name, p) == pytest.approx(1.83, abs=0.005), p
    tensor_clock = hw.quoted_clock_GHz("H200", "tf32")
    fp32_there = hw.peak_at_clock_TFLOPS("H200", "fp32", tensor_clock)
    assert fp32_there == pytest.approx(61.8, abs=0.05)
    assert hw.peak_at_clock_TFLOPS("H200", "tf32", tensor_clock) / fp32_there == pytest.approx(8.0)
    assert hw.peak_at_clock_TFLOPS("H200", "fp16", tensor_clock) / fp32_there == pytest.approx(16.0, rel=2e-3)
    assert hw.peak_at_clock_TFLOPS("H200", "fp32", hw.quoted_clock_GHz("H200", "fp32")) == pytest.approx(67.0)


def test_clock_helpers_reject_what_they_do_not_know():
    with pytest.raises(ValueError, match=r"device='A100 SXM4 80GB': clocks per precision are known for H100 SXM, H200"):
        hw.quoted_clock_GHz("A100", "fp32")
    with pytest.raises(ValueError, match=r"precision='fp64': no FLOPs per SM per clock"):
        hw.quoted_clock_GHz("H200", "fp64")
    with pytest.raises(ValueError, match=r"clock_GHz must be a positive number, got 0"):
        hw.peak_at_clock_TFLOPS("H200", "fp32", 0)
