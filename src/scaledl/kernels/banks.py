"""Shared-memory bank conflicts: how many serial passes one warp-wide shared-memory access needs.

Shared memory on NVIDIA GPUs is split into 32 banks of 4-byte words; word ``w`` lives in bank ``w % 32``. A
warp's access is served in one pass when its 32 threads touch distinct banks, or the *same word* in a bank
(a broadcast). When ``d`` distinct words fall in one bank the access is replayed ``d`` times: a ``d``-way
bank conflict (CUDA C++ Programming Guide, "Shared Memory" in the compute-capability appendix).

>>> conflict_degree([0, 32, 64, 96])          # four words, one bank: 4-way
4
>>> conflict_degree([5] * 32)                 # one word for everyone: a broadcast
1
>>> tile = lambda width: (lambda tx, ty: ty * width + tx)   # thread (tx, ty) reads row ty, column tx
>>> block_conflict_degree(tile(64), (16, 16)), block_conflict_degree(tile(64 + 16), (16, 16))
(2, 1)
"""

from __future__ import annotations

from collections import defaultdict

BANKS = 32  # 4-byte banks on every NVIDIA architecture since Maxwell
WARP_SIZE = 32


def conflict_degree(word_addresses, banks: int = BANKS) -> int:
    """Passes needed for one access in which thread ``t`` touches ``word_addresses[t]`` (1 = conflict free).

    Raises:
        ValueError: ``banks`` below 1, or a negative address.
    """
    if not isinstance(banks, int) or banks < 1:
        raise ValueError(f"banks must be a positive integer, got {banks!r}")
    words_in_bank = defaultdict(set)
    for a in word_addresses:
        if int(a) != a or a < 0:
            raise ValueError(f"word addresses must be non-negative integers, got {a!r}")
        words_in_bank[int(a) % banks].add(int(a))
    return max((len(w) for w in words_in_bank.values()), default=0)


def block_conflict_degree(address_of, block_dim: tuple[int, int], warp_size: int = WARP_SIZE,
                          banks: int = BANKS) -> int:
    """Worst :func:`conflict_degree` over the warps of a ``(bx, by)`` block, for the access in which thread
    ``(tx, ty)`` touches word ``address_of(tx, ty)``. Threads are numbered ``tx + bx ty`` and cut into warps
    of ``warp_size`` consecutive threads, as CUDA does.

    Raises:
        ValueError: a block dimension or the warp size below 1.
    """
    bx, by = block_dim
    if min(bx, by, warp_size) < 1:
        raise ValueError(f"block_dim and warp_size must be positive, got block_dim={block_dim!r}, "
                         f"warp_size={warp_size!r}")
    threads = [(t % bx, t // bx) for t in range(bx * by)]
    return max(conflict_degree([address_of(tx, ty) for tx, ty in threads[w:w + warp_size]], banks)
               for w in range(0, len(threads), warp_size))
