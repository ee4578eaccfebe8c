import pytest

from scaledl.serve.lifetime import breakeven_tokens, inference_flops, inference_share, training_flops


def test_breakeven_is_three_training_sets_whatever_the_size():
    for params in (1e8, 7e9, 1.75e11):
        t = breakeven_tokens(2e12)
        assert inference_flops(params, t) == pytest.approx(training_flops(params, 2e12), rel=1e-15)
    assert inference_share(2e12, tokens_per_day=6e12, days=1) == pytest.approx(0.5)
    assert inference_share(2e12, tokens_per_day=1e9, days=1) < 1e-3


def test_errors():
    with pytest.raises(ValueError, match="train_tokens must be a positive finite number, got 0"):
        breakeven_tokens(0)
    with pytest.raises(ValueError, match="days must be a positive finite number, got -1"):
        inference_share(1e12, tokens_per_day=1e9, days=-1)
    with pytest.raises(TypeError, match="params must be a number"):
        training_flops("7B", 1e12)
