"""Four float32 values in one 128-bit load (CUDA's ``float4``), for kernels written with Numba.

A GPU loads 4, 8 or 16 bytes per thread with one instruction (``LDG.E``, ``LDG.E.64``, ``LDG.E.128``). Numba
indexes a float32 array four bytes at a time and does not know that ``A[r, c]`` is 16-byte aligned, so four
neighbouring reads stay four instructions (tools: ``scaledl kernels report`` counts them). CUDA C reinterprets
the pointer as ``float4*``; :func:`load4` does the same through Numba's extension API (an ``@intrinsic`` that
emits a ``<4 x float>`` load aligned to 16 bytes), and checks the alignment first: a row whose start is not a
multiple of 16 bytes (a matrix with ``K % 4 != 0``, or a view that starts mid-row) takes four ordinary loads.

On the simulator, and wherever a kernel's Python body runs (``count_gemm_traffic``, also beside a GPU),
:func:`load4` and :func:`load4_guarded` are the plain Python functions below: element reads, each counted.

>>> import numpy as np
>>> [float(x) for x in load4(np.arange(12, dtype=np.float32).reshape(2, 6), 1, 2)]
[8.0, 9.0, 10.0, 11.0]
"""

from __future__ import annotations

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import float32, uint32

__all__ = ["load4", "load4_guarded", "VECTOR_BYTES"]

VECTOR_BYTES = 16  # one float4: the widest load a thread issues


def load4(A, r, c):
    """``(A[r, c], A[r, c + 1], A[r, c + 2], A[r, c + 3])`` of a 2-D float32 array, as one 128-bit load on a
    GPU where ``&A[r, c]`` is 16-byte aligned. The caller guarantees ``c + 3 < A.shape[1]``."""
    return A[r, c], A[r, c + 1], A[r, c + 2], A[r, c + 3]


def load4_guarded(X, r, c, rows, cols):
    """``X[r, c:c + 4]`` with zeros past the matrix's edges (``rows x cols``; unsigned 32-bit indices): one
    :func:`load4` where all four are inside, otherwise up to four guarded loads.

    A plain function on the simulator (so a counted run sees each element read), compiled into the kernel
    that calls it on a GPU."""
    if r < rows and c + uint32(3) < cols:
        return load4(X, r, c)
    x0 = X[r, c] if r < rows and c < cols else float32(0.0)
    x1 = X[r, c + uint32(1)] if r < rows and c + uint32(1) < cols else float32(0.0)
    x2 = X[r, c + uint32(2)] if r < rows and c + uint32(2) < cols else float32(0.0)
    x3 = X[r, c + uint32(3)] if r < rows and c + uint32(3) < cols else float32(0.0)
    return x0, x1, x2, x3


def _register_cuda_overload() -> None:  # pragma: no cover - runs where the backend is "cuda" (a GPU, or the
    # compile-only processes of tests/sim and scaledl.kernels.static_report)
    import functools

    from numba import types

    try:  # numba-cuda >= 0.22 has its own extension API; older releases use Numba's with target="cuda"
        from numba.cuda import cgutils
        from numba.cuda.extending import intrinsic, overload
    except ImportError:
        from numba.core import cgutils
        from numba.core.extending import intrinsic, overload

        overload = functools.partial(overload, target="cuda")
    ir = cgutils.ir  # llvmlite's IR builder, as Numba uses it (llvmlite comes with numba, not on its own)

    def element_pointer(context, builder, sig, args):
        aryty, rty, cty = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        inds = [context.cast(builder, args[1], rty, types.intp), context.cast(builder, args[2], cty, types.intp)]
        return cgutils.get_item_pointer(context, builder, aryty, ary, inds)

    def is_f32_matrix(A):
        return isinstance(A, types.Array) and A.dtype == types.float32 and A.ndim == 2

    @intrinsic
    def address_of(typingctx, A, r, c):
        """The address of ``A[r, c]`` as an integer (to test its alignment)."""
        if not is_f32_matrix(A):
            return None

        def codegen(context, builder, sig, args):
            return builder.ptrtoint(element_pointer(context, builder, sig, args), ir.IntType(64))

        return types.int64(A, r, c), codegen

    @intrinsic
    def load_f32x4(typingctx, A, r, c):
        """``A[r, c:c + 4]`` as one ``<4 x float>`` load with 16-byte alignment: ``ld.global.v4.f32``."""
        if not is_f32_matrix(A):
            return None
        ret = types.UniTuple(types.float32, 4)

        def codegen(context, builder, sig, args):
            ptr = element_pointer(context, builder, sig, args)
            vec = builder.load(builder.bitcast(ptr, ir.VectorType(ir.FloatType(), 4).as_pointer()), align=16)
            items = [builder.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(4)]
            return context.make_tuple(builder, ret, items)

        return ret(A, r, c), codegen

    @overload(load4)
    def load4_cuda(A, r, c):
        if not is_f32_matrix(A):
            return None

        def impl(A, r, c):
            if address_of(A, r, c) & 15 == 0:
                return load_f32x4(A, r, c)
            return A[r, c], A[r, c + 1], A[r, c + 2], A[r, c + 3]

        return impl

    @overload(load4_guarded)
    def load4_guarded_cuda(X, r, c, rows, cols):
        return load4_guarded if is_f32_matrix(X) else None  # the Python function above, compiled


if scaledl.device.backend() == "cuda":
    _register_cuda_overload()
