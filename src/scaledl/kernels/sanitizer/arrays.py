"""The arrays a watched kernel indexes: every element access is bounds-checked, then logged for the analysis.

A kernel on the simulator indexes its global arrays through the simulator's wrappers and its shared arrays as
plain NumPy arrays; under ``sanitize()`` both are a :class:`Watched` instead. An access computes the element's
byte offset in its :class:`Root` (the array as the kernel got or declared it, so a row view ``A[i]`` and
``A[i, j]`` name the same element), refuses an index outside the shape (a negative one too, which NumPy would
wrap), and appends one tuple to the running block's log: ``(root, offset, op, thread, epoch, code, line)``.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

READ, WRITE, ATOMIC = 0, 1, 2
_getframe = sys._getframe
_current_thread = threading.current_thread


class _NotElement(Exception):
    """The index names a view or uses slices, not one element (the slow path)."""


class Root:
    """One watched array: a kernel's global argument, or one of a launch's shared arrays."""

    __slots__ = ("name", "ary", "shared", "written", "ptr")

    def __init__(self, name: str, ary: np.ndarray, shared: bool):
        self.name = name
        self.ary = ary
        self.shared = shared
        self.written = False  # any write or atomic in this launch (reads alone never race)
        self.ptr = ary.__array_interface__["data"][0]

    def index_of(self, offset: int) -> tuple[int, ...]:
        """The index of the element at ``offset`` bytes from the start."""
        index = [0] * self.ary.ndim
        for axis in sorted(range(self.ary.ndim), key=lambda a: -abs(self.ary.strides[a])):
            s = self.ary.strides[axis]
            if s:
                index[axis], offset = divmod(offset, s)
        return tuple(int(i) for i in index)


class Watched:
    """A watched array (or a view of one) as the kernel sees it.

    ``log``: the launch's list that accesses go to (shared and global arrays have one each). ``launch``
    receives out-of-bounds accesses as they happen (``launch.out_of_bounds``). ``fake``: the simulator's own
    wrapper of a global argument, which answers attribute lookups (``A.shape``) as the simulator would."""

    __slots__ = ("_ary", "_root", "_base", "_shape", "_strides", "_ndim", "_log", "_append", "_launch", "_fake",
                 "_zero", "_n0", "_n1", "_n2", "_n3", "_s0", "_s1", "_s2", "_s3")

    def __init__(self, ary: np.ndarray, root: Root, base: int, log: list, launch, fake=None):
        self._ary = ary
        self._root = root
        self._base = base
        self._shape = ary.shape
        self._strides = ary.strides
        self._ndim = ary.ndim
        self._log = log
        self._append = log.append
        self._launch = launch
        self._fake = fake
        self._zero = np.zeros((), ary.dtype)[()]
        # the fast paths' dimensions and strides (unused ones stay 0)
        self._n0, self._n1, self._n2, self._n3 = (tuple(ary.shape) + (0, 0, 0, 0))[:4]
        self._s0, self._s1, self._s2, self._s3 = (tuple(ary.strides) + (0, 0, 0, 0))[:4]

    # ------------------------------------------------------------------------------- element offsets
    def _offset(self, idx):
        """Byte offset of element ``idx`` from the root's start; ``(axis, index)`` (a tuple) when out of
        bounds; raises _NotElement for a view or a slice."""
        off = self._base
        try:
            if type(idx) is tuple:
                if len(idx) != self._ndim:
                    raise _NotElement
                axis = 0
                for i, n, s in zip(idx, self._shape, self._strides):
                    if i < 0 or i >= n:
                        return (axis, idx)
                    off += i * s
                    axis += 1
                return off
            if self._ndim != 1:
                raise _NotElement
            if idx < 0 or idx >= self._shape[0]:
                return (0, (idx,))
            return off + idx * self._strides[0]
        except (TypeError, ValueError):  # a slice, Ellipsis, None or an array in the index
            raise _NotElement from None

    def __getitem__(self, idx):
        return self._get(idx, _getframe(1))

    def __setitem__(self, idx, value):
        self._set(idx, value, _getframe(1))

    def _get(self, idx, f):
        """The general read: ``f`` is the kernel's frame (the fast paths below call this too)."""
        try:
            off = self._offset(idx)
        except _NotElement:
            return self._view(idx, f)
        if type(off) is tuple:
            self._launch.out_of_bounds(self, off, READ, f)
            return self._zero
        t = _current_thread()
        self._append((self._root, off, READ, t, t._sz_epoch, f.f_code, f.f_lineno))
        return self._ary[idx]

    def _set(self, idx, value, f) -> None:
        try:
            off = self._offset(idx)
        except _NotElement:
            return self._assign(idx, value, f)
        if type(off) is tuple:
            self._launch.out_of_bounds(self, off, WRITE, f)
            return None
        t = _current_thread()
        self._root.written = True
        self._append((self._root, off, WRITE, t, t._sz_epoch, f.f_code, f.f_lineno))
        self._ary[idx] = value
        return None

    def atomic(self, idx, frame):
        """Log an atomic update of element ``idx``; the raw array to update, or None when out of bounds."""
        try:
            off = self._offset(idx)
        except _NotElement:
            return self._ary
        if type(off) is tuple:
            self._launch.out_of_bounds(self, off, ATOMIC, frame)
            return None
        t = _current_thread()
        self._root.written = True
        self._log.append((self._root, off, ATOMIC, t, t._sz_epoch, frame.f_code, frame.f_lineno))
        return self._ary

    # ----------------------------------------------------------------------- views and slices (rare)
    def _bad_part(self, idx):
        """``(axis, idx)`` for the first integer outside its axis, or a slice bound outside ``[0, n]``."""
        parts = idx if type(idx) is tuple else (idx,)
        if any(p is Ellipsis or p is None for p in parts):
            return None
        for axis, (p, n) in enumerate(zip(parts, self._shape)):
            if isinstance(p, slice):
                if any(b is not None and not 0 <= b <= n for b in (p.start, p.stop)):
                    bad = p.start if p.start is not None and not 0 <= p.start <= n else p.stop
                    return (axis, parts[:axis] + (bad,) + parts[axis + 1:])
            elif isinstance(p, (int, np.integer)) and not 0 <= p < n:
                return (axis, parts)
        return None

    def _view(self, idx, f):
        bad = self._bad_part(idx)
        if bad is not None:
            self._launch.out_of_bounds(self, bad, READ, f)
            try:  # zeros shaped as the view would have been (a stand-in: the access was not performed)
                shape = np.broadcast_to(False, self._shape)[idx].shape
            except IndexError:
                shape = ()
            return np.zeros(shape, self._ary.dtype) if shape else self._zero
        res = self._ary[idx]
        if not isinstance(res, np.ndarray):
            return res
        return watch(res, self._root, res.__array_interface__["data"][0] - self._root.ptr, self._log, self._launch)

    def _assign(self, idx, value, f):
        bad = self._bad_part(idx)
        if bad is not None:
            self._launch.out_of_bounds(self, bad, WRITE, f)
            return None
        target = self._ary[idx]
        if isinstance(target, np.ndarray):
            t = _current_thread()
            start = target.__array_interface__["data"][0] - self._root.ptr
            self._root.written = True
            for ix in np.ndindex(*target.shape):
                off = start + sum(i * s for i, s in zip(ix, target.strides))
                self._log.append((self._root, off, WRITE, t, t._sz_epoch, f.f_code, f.f_lineno))
        self._ary[idx] = value
        return None

    # ------------------------------------------------------------------------ the rest of an array
    def __len__(self):
        return len(self._ary)

    def __iter__(self):  # an out-of-range index returns zero here, so iteration cannot stop at IndexError
        for i in range(len(self._ary)):
            yield self[i]

    def __getattr__(self, name):
        return getattr(self._fake if self._fake is not None else self._ary, name)

    def __repr__(self):
        return f"<watched {'shared' if self._root.shared else 'global'} array {self._root.name} {self._shape}>"


# -------------------------------------------------------------------------- fast paths by dimension
# An element access of a 1-, 2- or 3-D array is most of what a kernel does: these check the bounds and
# compute the offset without a loop, and leave anything else (a view, a slice) to Watched's general path.
# A comparison that raises (a slice, a tuple where an int was expected) sends the index there too.
class _Watched1(Watched):
    __slots__ = ()

    def __getitem__(self, i):
        try:
            inside = 0 <= i < self._n0
        except TypeError:
            return self._get(i, _getframe(1))
        if not inside:
            return self._get(i, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._append((self._root, self._base + i * self._s0, READ, t, t._sz_epoch, f.f_code, f.f_lineno))
        return self._ary[i]

    def __setitem__(self, i, value):
        try:
            inside = 0 <= i < self._n0
        except TypeError:
            return self._set(i, value, _getframe(1))
        if not inside:
            return self._set(i, value, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._root.written = True
        self._append((self._root, self._base + i * self._s0, WRITE, t, t._sz_epoch, f.f_code, f.f_lineno))
        self._ary[i] = value
        return None


class _Watched2(Watched):
    __slots__ = ()

    def __getitem__(self, idx):
        try:
            i, j = idx
            inside = 0 <= i < self._n0 and 0 <= j < self._n1
        except (TypeError, ValueError):
            return self._get(idx, _getframe(1))
        if not inside:
            return self._get(idx, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._append((self._root, self._base + i * self._s0 + j * self._s1, READ, t, t._sz_epoch, f.f_code,
                      f.f_lineno))
        return self._ary[idx]

    def __setitem__(self, idx, value):
        try:
            i, j = idx
            inside = 0 <= i < self._n0 and 0 <= j < self._n1
        except (TypeError, ValueError):
            return self._set(idx, value, _getframe(1))
        if not inside:
            return self._set(idx, value, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._root.written = True
        self._append((self._root, self._base + i * self._s0 + j * self._s1, WRITE, t, t._sz_epoch, f.f_code,
                      f.f_lineno))
        self._ary[idx] = value
        return None


class _Watched3(Watched):
    __slots__ = ()

    def __getitem__(self, idx):
        try:
            i, j, k = idx
            inside = 0 <= i < self._n0 and 0 <= j < self._n1 and 0 <= k < self._n2
        except (TypeError, ValueError):
            return self._get(idx, _getframe(1))
        if not inside:
            return self._get(idx, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._append((self._root, self._base + i * self._s0 + j * self._s1 + k * self._s2, READ, t, t._sz_epoch,
                      f.f_code, f.f_lineno))
        return self._ary[idx]

    def __setitem__(self, idx, value):
        try:
            i, j, k = idx
            inside = 0 <= i < self._n0 and 0 <= j < self._n1 and 0 <= k < self._n2
        except (TypeError, ValueError):
            return self._set(idx, value, _getframe(1))
        if not inside:
            return self._set(idx, value, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._root.written = True
        self._append((self._root, self._base + i * self._s0 + j * self._s1 + k * self._s2, WRITE, t, t._sz_epoch,
                      f.f_code, f.f_lineno))
        self._ary[idx] = value
        return None


class _Watched4(Watched):  # a convolution's filters, w[k, c, r, s]
    __slots__ = ()

    def __getitem__(self, idx):
        try:
            i, j, k, m = idx
            inside = 0 <= i < self._n0 and 0 <= j < self._n1 and 0 <= k < self._n2 and 0 <= m < self._n3
        except (TypeError, ValueError):
            return self._get(idx, _getframe(1))
        if not inside:
            return self._get(idx, _getframe(1))
        t = _current_thread()
        f = _getframe(1)
        self._append((self._root, self._base + i * self._s0 + j * self._s1 + k * self._s2 + m * self._s3, READ, t,
                      t._sz_epoch, f.f_code, f.f_lineno))
        return self._ary[idx]


_BY_NDIM = {1: _Watched1, 2: _Watched2, 3: _Watched3, 4: _Watched4}


def watch(ary: np.ndarray, root: Root, base: int, log: list, launch, fake=None) -> Watched:
    """A :class:`Watched` for ``ary``, with the fast path of its dimension where there is one."""
    return _BY_NDIM.get(ary.ndim, Watched)(ary, root, base, log, launch, fake)
