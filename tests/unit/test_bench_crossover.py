"""`scaledl bench`'s SpMV crossover: the density at which the fastest CSR kernel stops beating dense GEMV."""

import math

import pytest

from scaledl.kernels.bench_sections import crossover_density, crossover_text

D = [0.001, 0.01, 0.1, 0.3]


def test_interpolates_linearly_between_the_last_win_and_the_first_loss():
    # sparse ahead by 1.0 ms at 0.1, behind by 3.0 at 0.3: a quarter of the way from 0.1 to 0.3
    assert crossover_density(D, [0.1, 0.5, 2.0, 6.0], [3.0, 3.0, 3.0, 3.0]) == pytest.approx(0.15)
    assert crossover_density([0.1, 0.3], [1.0, 3.0], [2.0, 2.0]) == pytest.approx(0.2)


def test_a_tie_is_a_loss_and_the_first_loss_counts():
    assert crossover_density(D, [1.0, 2.0, 3.0, 4.0], [3.0, 3.0, 3.0, 3.0]) == pytest.approx(0.1)  # tie at 0.1
    # a noisy win after the first loss does not move the answer
    noisy = crossover_density(D, [1.0, 4.0, 2.0, 5.0], [3.0, 3.0, 3.0, 3.0])
    assert noisy == pytest.approx(0.001 + 0.009 * 2 / 3)


def test_outside_the_measured_range():
    assert crossover_density(D, [1, 1, 1, 1], [2, 2, 2, 2]) == math.inf  # sparse wins everywhere
    assert crossover_density(D, [3, 3, 3, 3], [2, 2, 2, 2]) == 0.0  # sparse loses already at 0.001
    assert crossover_density([0.5], [1.0], [2.0]) == math.inf
    assert crossover_text(math.inf, D) == "> 0.3" and crossover_text(0.0, D) == "< 0.001"
    assert crossover_text(0.15, D) == "0.15" and crossover_text(0.0123456, D) == "0.012"


@pytest.mark.parametrize("args, message", [
    (([], [], []), "must be non-empty lists of one length, got lengths 0, 0 and 0"),
    (([0.1, 0.2], [1.0], [1.0, 1.0]), "got lengths 2, 1 and 2"),
    (([0.2, 0.1], [1, 1], [1, 1]), r"densities must increase within \(0, 1\], got \[0.2, 0.1\]"),
    (([0.0, 0.1], [1, 1], [1, 1]), "densities must increase within"),
    (([0.5, 1.5], [1, 1], [1, 1]), "densities must increase within"),
    (([0.1, 0.2], [1, 0], [1, 1]), "sparse_ms must be positive finite times"),
    (([0.1, 0.2], [1, 1], [1, math.nan]), "dense_ms must be positive finite times"),
])
def test_bad_input_names_the_argument(args, message):
    with pytest.raises(ValueError, match=message):
        crossover_density(*args)
