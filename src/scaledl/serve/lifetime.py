"""Training against inference compute over a model's service life: why "most compute is inference".

A dense transformer of ``N`` parameters spends about ``2 N`` FLOPs per token in a forward pass (one multiply
and one add per weight) and about ``6 N`` per token in training (forward, and a backward pass twice as
costly), the rule of thumb of Kaplan et al., "Scaling Laws for Neural Language Models" (arXiv 2001.08361,
2020). Training on ``D`` tokens therefore costs ``6 N D`` and serving ``T`` tokens ``2 N T``: inference
overtakes training once ``T = 3 D`` tokens have been served, whatever the model's size. (Attention over a
long context adds FLOPs per served token, so the crossing comes earlier, not later.)

>>> round(breakeven_tokens(2e12) / 1e12)                      # a model trained on 2 T tokens: 6 T tokens served
6
>>> round(inference_share(2e12, tokens_per_day=1e11, days=365), 3)   # 100 B tokens a day for a year
0.859
"""

from __future__ import annotations

from scaledl._args import positive

TRAIN_FLOPS_PER_PARAM_TOKEN = 6  # forward 2 + backward 4 (Kaplan et al. 2020, section 2.1)
INFER_FLOPS_PER_PARAM_TOKEN = 2  # forward only


def training_flops(params: float, train_tokens: float) -> float:
    """``6 N D``: FLOPs to train ``params`` parameters on ``train_tokens`` tokens."""
    return TRAIN_FLOPS_PER_PARAM_TOKEN * positive("params", params) * positive("train_tokens", train_tokens)


def inference_flops(params: float, served_tokens: float) -> float:
    """``2 N T``: FLOPs to serve ``served_tokens`` tokens (prompt and generated) with ``params`` parameters."""
    return INFER_FLOPS_PER_PARAM_TOKEN * positive("params", params) * positive("served_tokens", served_tokens)


def breakeven_tokens(train_tokens: float) -> float:
    """Tokens served at which inference has used as many FLOPs as training: ``3 D`` (independent of ``N``)."""
    return TRAIN_FLOPS_PER_PARAM_TOKEN / INFER_FLOPS_PER_PARAM_TOKEN * positive("train_tokens", train_tokens)


def inference_share(train_tokens: float, *, tokens_per_day: float, days: float) -> float:
    """Inference's share of a model's lifetime FLOPs (training + serving ``tokens_per_day`` for ``days``)."""
    served = positive("tokens_per_day", tokens_per_day) * positive("days", days)
    return served / (served + breakeven_tokens(train_tokens))
