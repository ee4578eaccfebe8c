"""warp-ctc's speed claims, from the tables of its README, so a chapter quotes ranges rather than a slogan.

Bryan Catanzaro's slides ("Scaling Deep Learning", Baidu SVAIL, about 2016) say warp-ctc (Baidu's CTC loss) is
"100-400X faster than other implementations". The project's README (github.com/baidu-research/warp-ctc,
README.md, "Performance") is more careful: it times two problem sizes (English: T=150 frames, L=40 labels, A=28
characters; Mandarin: T=150, L=20, A=5000) at minibatches N = 1 to 128 against Eesen (GPU only) and a Theano
implementation, and states: "On the GPU, our performance at a minibatch of 64 examples ranges from 7x faster to
155x faster than Eesen, and 46x to 68x faster than the Theano implementation." Its CPU table (two Xeon E5-2660
v3, 40 threads) reaches 467x over Theano, which did not use more than one thread; at minibatch 1 on the GPU,
Eesen is faster than warp-ctc.

>>> lo, hi = speedup_range("gpu", "eesen", n=64)
>>> round(lo, 1), round(hi, 1)
(7.3, 154.7)
>>> [round(x, 1) for x in speedup_range("gpu", "theano", n=64)]
[46.4, 68.8]
>>> [round(x, 1) for x in speedup_range("cpu", "theano")]       # every size and minibatch
[5.8, 467.4]
>>> round(speedup_range("gpu", "eesen", n=1)[0], 2)             # Eesen wins at minibatch 1
0.16
"""

from __future__ import annotations

README_CITATION = ("baidu-research/warp-ctc, README.md, section Performance (2016): GPU tables on one NVIDIA "
                   "Titan X, CPU tables on 2x Intel E5-2660 v3 with 40 threads")
# Catanzaro, "Scaling Deep Learning" (Baidu SVAIL slides, about 2016), slide "warp-ctc": "100-400X faster than
# other implementations".
CLAIMED_SPEEDUP_RANGE = (100.0, 400.0)
PROBLEMS = {"english": "T=150, L=40, A=28", "mandarin": "T=150, L=20, A=5000"}
BASELINES = ("eesen", "theano")

# milliseconds: (device, problem) -> {minibatch N: (warp-ctc, Eesen, Theano)}; None: not available
README_MS = {
    ("gpu", "english"): {1: (3.1, 0.5, 67), 16: (3.2, 6, 94), 32: (3.2, 12, 119), 64: (3.3, 24, 153),
                         128: (3.5, 49, 231)},
    ("gpu", "mandarin"): {1: (7, 40, 120), 16: (9, 619, 385), 32: (11, 1238, 665), 64: (16, 2475, 1100),
                          128: (23, 4950, 2100)},
    ("cpu", "english"): {1: (2.6, None, 15), 16: (3.4, None, 180), 32: (3.9, None, 375), 64: (6.6, None, 700),
                         128: (12.2, None, 1340)},
    ("cpu", "mandarin"): {1: (21, None, 850), 16: (37, None, 10800), 32: (54, None, 22000),
                          64: (101, None, 42000), 128: (184, None, 86000)},
}


def speedups(device: str, baseline: str, n: int | None = None) -> dict:
    """``{(problem, N): baseline time / warp-ctc time}`` from the README's tables (``n``: one minibatch only)."""
    if device not in ("gpu", "cpu"):
        raise ValueError(f"device={device!r}; expected 'gpu' or 'cpu'")
    if baseline not in BASELINES:
        raise ValueError(f"baseline={baseline!r}; expected one of {BASELINES}")
    column = 1 + BASELINES.index(baseline)
    out = {}
    for (dev, problem), rows in README_MS.items():
        for size, times in rows.items():
            if dev == device and (n is None or size == n) and times[column] is not None:
                out[(problem, size)] = times[column] / times[0]
    if not out:
        raise ValueError(f"the README has no {baseline} timing on the {device} at minibatch {n}")
    return out


def speedup_range(device: str, baseline: str, n: int | None = None) -> tuple[float, float]:
    """Smallest and largest speedup of warp-ctc over ``baseline`` on ``device`` (at minibatch ``n``)."""
    s = speedups(device, baseline, n).values()
    return min(s), max(s)
