"""FPGA/ASIC gap (Kuon and Rose) and TPU v1 figures (Jouppi et al.): the derived ratios the chapter prints."""

import pytest

from scaledl.perf import accelerators as A


def test_kuon_rose_figures_and_derived_ratios():
    assert (A.KUON_ROSE_FPGA2006.area, A.KUON_ROSE_FPGA2006.area_with_hard_blocks) == (40.0, 21.0)
    assert (A.KUON_ROSE_TCAD2007.area, A.KUON_ROSE_TCAD2007.area_with_hard_blocks) == (35.0, 18.0)
    assert A.KUON_ROSE_FPGA2006.dynamic_power == 12.0 and A.KUON_ROSE_TCAD2007.dynamic_power == 14.0
    # area x delay brackets the talk's "~100x": 18 x 3 = 54 to 40 x 4 = 160
    assert A.KUON_ROSE_TCAD2007.area_delay_low == 54.0 and A.KUON_ROSE_FPGA2006.area_delay_high == 160.0
    assert A.fpga_energy_advantage_of_gpu(1.0, A.KUON_ROSE_TCAD2007) == 14.0
    assert A.fpga_energy_advantage_of_gpu(1.2727, A.KUON_ROSE_FPGA2006) == pytest.approx(9.43, abs=0.01)
    with pytest.raises(ValueError, match="gpu_over_asic"):
        A.fpga_energy_advantage_of_gpu(0.0, A.KUON_ROSE_TCAD2007)


def test_tpu_v1_peak_efficiency_over_k80():
    # 92 TOPS / 40 W against 2.8 TFLOPS / 98 W: about 80x, the top of the paper's "30X - 80X" TOPS/W range
    assert A.peak_efficiency_ratio(A.TPU_V1, A.K80_DIE) == pytest.approx(80.5, abs=0.1)
    assert A.TPU_V1.precision == "int8" and A.K80_DIE.precision == "fp32"
