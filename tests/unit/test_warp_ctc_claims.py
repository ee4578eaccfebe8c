"""warp-ctc's README sentence follows from its own tables; the slides' flat "100-400X" does not."""

import pytest

from scaledl.perf.warp_ctc import CLAIMED_SPEEDUP_RANGE, speedup_range, speedups


def test_readme_sentence_matches_its_tables():
    # "at a minibatch of 64 ... from 7x faster to 155x faster than Eesen, and 46x to 68x faster than Theano"
    lo, hi = speedup_range("gpu", "eesen", n=64)
    assert round(lo) == 7 and round(hi) == 155
    lo, hi = speedup_range("gpu", "theano", n=64)
    assert round(lo) == 46 and int(hi) == 68  # 1100 / 16 = 68.75: the README truncates


def test_slide_claim_is_a_range_not_a_fact():
    every = [v for dev, base in (("gpu", "eesen"), ("gpu", "theano"), ("cpu", "theano"))
             for v in speedups(dev, base).values()]
    inside = [v for v in every if CLAIMED_SPEEDUP_RANGE[0] <= v <= CLAIMED_SPEEDUP_RANGE[1]]
    assert min(every) < 1 and max(every) > 400  # from slower (GPU, N=1 vs Eesen) to 467x (CPU vs Theano)
    assert len(inside) < len(every) / 2  # most of the README's comparisons fall outside "100-400X"


def test_errors():
    with pytest.raises(ValueError, match="the README has no eesen timing on the cpu"):
        speedups("cpu", "eesen")
    with pytest.raises(ValueError, match="baseline='cudnn'"):
        speedups("gpu", "cudnn")
    with pytest.raises(ValueError, match="device='tpu'"):
        speedups("tpu", "theano")
