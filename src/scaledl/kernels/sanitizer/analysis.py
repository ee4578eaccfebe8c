"""The checks, run on one block's log when the block ends (shared memory, barriers) and on each block's
global accesses when the launch ends (global memory, whose races cross blocks).

Barrier epochs: a thread's epoch is the number of ``cuda.syncthreads()`` it has passed. The simulator releases
a barrier only when every live thread of the block waits at one, so the k-th barrier of every thread is the
same release, and the log, appended in the order the accesses happened, lists every access of epoch k before
any of epoch k + 1. Two accesses of one element by two threads of a block are ordered exactly when their
epochs differ; threads of two blocks are never ordered within a launch. :func:`scan` keeps, per element and
for the current epoch only, the last writer, two readers and two atomic updaters of distinct threads: enough
to find a conflicting pair whatever the order the interleaving produced them in.
"""

from __future__ import annotations

from scaledl.kernels.sanitizer.arrays import ATOMIC, READ, WRITE

# one element's state in the running block: the epoch the next five slots are for, its last writer, two
# readers and two atomic updaters (of distinct threads), the epoch of its first write in the block, and the
# first write, read and atomic of the block (any epoch), which join the earlier blocks' when the block ends
EP, W, R1, R2, A1, A2, INIT, BW, BR, BA = range(10)


def _other(x, y, t):
    """The one of two slots whose thread is not ``t`` (slots hold distinct threads), or None."""
    if x is not None and x[3] is not t:
        return x
    if y is not None and y[3] is not t:
        return y
    return None


def scan(entries, race, *, prev: dict | None = None, uninitialized=None) -> None:
    """Call ``race(earlier, later)`` for each conflicting pair of one block's accesses (log order).

    ``prev``: global memory only, ``{(root, offset): [write, read, atomic]}`` from the launch's earlier blocks,
    which conflict with any access of this block (updated with this block's on return).
    ``uninitialized(access)``: shared memory only, called for each read (or atomic) of an element no thread
    of the block had written before it; a read that a write of another thread in the same epoch follows is a
    race, reported as that, not as this."""
    state: dict = {}
    pending: dict = {}
    for e in entries:
        key = (e[0], e[1])
        op, t, ep = e[2], e[3], e[4]
        st = state.get(key)
        if st is None:
            st = state[key] = [ep, None, None, None, None, None, None, None, None, None]
        elif st[EP] != ep:
            st[EP] = ep
            st[W] = st[R1] = st[R2] = st[A1] = st[A2] = None
        w = st[W]
        if w is not None and w[3] is not t:
            race(w, e)
        elif op == READ:
            a = _other(st[A1], st[A2], t)
            if a is not None:
                race(a, e)
        else:
            other = _other(st[R1], st[R2], t) or (_other(st[A1], st[A2], t) if op == WRITE else None)
            if other is not None:
                race(other, e)
        if prev is not None:
            p = prev.get(key)
            if p is not None:
                q = (p[0] or p[2]) if op == READ else (p[0] or p[1] or (p[2] if op == WRITE else None))
                if q is not None:
                    race(q, e)
        if op == READ:
            if st[R1] is None:
                st[R1] = e
            elif st[R2] is None and st[R1][3] is not t:
                st[R2] = e
            if st[BR] is None:
                st[BR] = e
            if uninitialized is not None and st[INIT] is None and key not in pending:
                pending[key] = e
            continue
        if uninitialized is not None and st[INIT] is None:
            q = pending.get(key)
            if q is not None and q[4] == ep and q[3] is not t:
                del pending[key]  # a read another thread's write follows unordered: the race says it
            elif q is None and op == ATOMIC:
                pending[key] = e  # an atomic reads the element too
            st[INIT] = ep
        if op == WRITE:
            st[W] = e
            if st[BW] is None:
                st[BW] = e
        else:
            if st[A1] is None:
                st[A1] = e
            elif st[A2] is None and st[A1][3] is not t:
                st[A2] = e
            if st[BA] is None:
                st[BA] = e
    if prev is not None:
        for key, st in state.items():
            p = prev.get(key)
            if p is None:
                prev[key] = [st[BW], st[BR], st[BA]]
            else:
                p[0], p[1], p[2] = p[0] or st[BW], p[1] or st[BR], p[2] or st[BA]
    if uninitialized is not None:
        for e in pending.values():
            uninitialized(e)


def barrier_divergence(threads):
    """The first barrier at which the block's threads part: ``(k, waiting, site, other, other_site)``, where
    ``other_site`` is None for a thread that had finished; None if every thread passed the same barriers.

    ``threads``: the block's threads, each with ``_sz_sites``, the call site of each barrier it reached."""
    sites = [t._sz_sites for t in threads]
    if all(s == sites[0] for s in sites):
        return None
    for k in range(max(len(s) for s in sites)):
        seen: dict = {}
        for t, s in zip(threads, sites):
            seen.setdefault(s[k] if k < len(s) else None, t)
        if len(seen) > 1:
            site, waiting = next((o, t) for o, t in seen.items() if o is not None)
            other_site, other = next((o, t) for o, t in seen.items() if o != site)
            return k, waiting, site, other, other_site
    return None  # pragma: no cover - lists that differ differ at some index
