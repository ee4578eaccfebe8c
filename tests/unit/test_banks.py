"""Bank-conflict counting: exact cases (broadcast, stride 2, stride 32) and the padding that removes them."""

import pytest

from scaledl.kernels.banks import block_conflict_degree, conflict_degree


@pytest.mark.parametrize("addresses,degree", [
    (list(range(32)), 1),               # consecutive words: 32 banks, one pass
    ([7] * 32, 1),                      # the same word: broadcast
    ([2 * t for t in range(32)], 2),    # stride 2: banks 0, 2, ..., 30 each hold two words
    ([32 * t for t in range(32)], 32),  # stride 32: everything in bank 0
    ([33 * t for t in range(32)], 1),   # stride 33 (a padded column): distinct banks again
    ([], 0),
])
def test_conflict_degree_exact_cases(addresses, degree):
    assert conflict_degree(addresses) == degree


def test_row_reads_of_a_64_wide_tile_conflict_and_padding_fixes_them():
    # a 16 x 16 block: a warp is two rows of tx; thread (tx, ty) reads sA[ty, k] -> two words, BM apart
    for width, degree in ((64, 2), (65, 1), (80, 1)):
        assert block_conflict_degree(lambda tx, ty, w=width: ty * w + 3, (16, 16)) == degree
    # stores sA[ty, tx]: padding by 1 shifts the second row by one bank only: still 2-way; by 16 it is free
    for width, degree in ((64, 2), (65, 2), (80, 1)):
        assert block_conflict_degree(lambda tx, ty, w=width: ty * w + tx, (16, 16)) == degree


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="banks must be a positive integer, got 0"):
        conflict_degree([0], banks=0)
    with pytest.raises(ValueError, match="non-negative integers, got -1"):
        conflict_degree([-1])
    with pytest.raises(ValueError, match="block_dim=\\(0, 4\\)"):
        block_conflict_degree(lambda tx, ty: 0, (0, 4))
