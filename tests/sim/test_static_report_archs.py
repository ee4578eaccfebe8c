"""Every kernel of the table compiles for each of the six targets students meet (sm_75 T4 ... sm_120 RTX PRO
6000) and launches within that target's limits: registers per thread, shared memory per block, threads per block,
at least one resident block per SM. The PTX is made for each target's compute capability, then ptxas assembles it
for that target. Skipped, with the reason, where ptxas, nvdisasm or libNVVM is missing (the dev extra has them)."""

import os

import pytest

from scaledl.kernels import occupancy as occ
from scaledl.kernels import static_report as sr

pytestmark = pytest.mark.sim
SIX = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]


def test_the_six_targets_are_known():
    assert sorted(sr.ARCHS) == sorted(SIX)
    assert occ.ARCHS["sm_75"].n_sms == 40 and occ.ARCHS["sm_75"].max_threads == 1024
    assert occ.compute_capability("sm_120") == (12, 0) and occ.arch_of((7, 5)) == "sm_75"


# make test compiles every kernel for the T4 (sm_75), the GPU most students get and the oldest target; the other
# five take a report each (about a minute on two cores): SCALEDL_ALL_ARCHS=1 compiles for all six.
ARCHS_HERE = SIX if os.environ.get("SCALEDL_ALL_ARCHS") == "1" else ["sm_75"]


@pytest.mark.parametrize("arch", ARCHS_HERE)
def test_every_kernel_compiles_and_fits(arch):
    try:
        reports = sr.report(arch=arch)
    except sr.ToolsMissing as err:
        pytest.skip(str(err))
    sm = sr.ARCHS[arch]
    bad = []
    for r in reports:
        if r.error:
            bad.append(f"{r.name}: did not compile for {arch}: {r.error[:300]}")
            continue
        per_block = sm.max_shared_per_block or sm.shared_bytes
        if r.registers > sm.max_registers_per_thread:
            bad.append(f"{r.name}: {r.registers} registers a thread, {sm.name} allows {sm.max_registers_per_thread}")
        if r.ptxas.shared_bytes > per_block:
            bad.append(f"{r.name}: {r.ptxas.shared_bytes} B of shared memory a block, {sm.name} allows {per_block}")
        if r.threads_per_block > min(1024, sm.max_threads):
            bad.append(f"{r.name}: {r.threads_per_block} threads a block, more than {sm.name} allows")
        if r.blocks_per_sm < 1:
            bad.append(f"{r.name}: no block fits on a {sm.name} SM ({r.occupancy.limited_by})")
    assert not bad, f"on {arch} ({sm.name}):\n" + "\n".join(bad)
    from scaledl.kernels import static_record

    if arch in static_record.RECORD_FILES:  # the record chapter 04 reads where the tools are missing (Colab)
        record = static_record.recorded(arch=arch)
        fix = f"; rewrite it with `scaledl kernels report --arch {arch} --write-record`"
        assert record.tools == static_record.toolchain(), "the record was made with another toolkit" + fix
        stale = [r.name for r in reports if record[r.name] != static_record._comparable(r)]
        assert record.names == tuple(r.name for r in reports) and stale == [], f"stale in the record: {stale}" + fix
