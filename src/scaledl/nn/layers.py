"""Layers: dense, ReLU, flatten and a small im2col convolution, each with a hand-written backward pass.

A layer keeps its parameters and their gradients in two plain dicts of NumPy arrays, ``params`` and
``grads``, keyed by short names (``"W"``, ``"b"``). :class:`scaledl.nn.model.Sequential` prefixes them with
the layer's name (``"fc1.W"``), which is how every other chapter reaches in.

Parametric layers (:class:`Dense`, :class:`Conv2d`) carry three hooks, all ``None`` by default:

* ``quantize_weight`` / ``quantize_input``: fake quantization, ``x -> quantized x`` (same shape, float).
  The backward pass uses the straight-through estimator: the quantizer is treated as the identity, so
  gradients flow to the full-precision master weights.
* ``precision``: a :class:`scaledl.nn.precision.Precision` whose ``round`` emulates a low-precision format.
  Inputs, weights, outputs and every gradient are rounded to it; products are accumulated in float32,
  as a Tensor Core does with FP16 inputs.

Every product and bias-gradient sum goes through :mod:`scaledl.nn.ops`, which adds in one fixed order, so
training gives the same bits on every CPU.

>>> import numpy as np
>>> layer = Dense(3, 2, rng=np.random.default_rng(0), name="fc")
>>> y = layer.forward(np.ones((4, 3), np.float32))
>>> y.shape, layer.backward(np.ones_like(y)).shape, layer.grads["W"].shape
((4, 2), (4, 3), (3, 2))
"""

from __future__ import annotations

import numpy as np

from scaledl.nn.ops import matmul, sum_rows


class Layer:
    """Base class: ``forward(x)`` caches what ``backward(dy)`` needs; ``backward`` fills ``grads``."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"name: expected a non-empty string without '.', got {name!r}")
        self.name = name
        self.params: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}

    def forward(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def backward(self, dy: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self):
        shapes = ", ".join(f"{k}{tuple(v.shape)}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.name}{': ' + shapes if shapes else ''})"


class _Parametric(Layer):
    """Shared casting logic of the layers that own weights (fake quantization and emulated precision)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.quantize_weight = None
        self.quantize_input = None
        self.precision = None

    def _round(self, a):
        return a if self.precision is None else self.precision.round(a)

    def _cast_forward(self, x, W):
        if self.quantize_input is not None:
            x = self.quantize_input(x)
        if self.quantize_weight is not None:
            W = self.quantize_weight(W)
        return self._round(x), self._round(W)


class Dense(_Parametric):
    """``y = x @ W + b`` with ``W`` of shape (n_in, n_out), He-initialised for a following ReLU."""

    def __init__(self, n_in: int, n_out: int, *, rng: np.random.Generator, name: str = "fc",
                 dtype=np.float32):
        super().__init__(name)
        for arg, v in (("n_in", n_in), ("n_out", n_out)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{arg}: expected a positive integer, got {v!r}")
        self.n_in, self.n_out = int(n_in), int(n_out)
        # He et al. 2015: variance 2/n_in keeps the activations' scale constant through ReLU layers.
        W = rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)
        self.params = {"W": W.astype(dtype), "b": np.zeros(n_out, dtype)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):
        if x.ndim != 2 or x.shape[1] != self.n_in:
            raise ValueError(f"{self.name}: input has shape {x.shape}, expected (batch, {self.n_in})")
        x, W = self._cast_forward(x, self.params["W"])
        self._x, self._W = x, W  # (batch, n_in), (n_in, n_out): the values the product really used
        return self._round(matmul(x, W) + self._round(self.params["b"]))

    def backward(self, dy):
        dy = self._round(dy)  # (batch, n_out)
        self.grads["W"] = self._round(matmul(self._x.T, dy))
        self.grads["b"] = self._round(sum_rows(dy))
        return self._round(matmul(dy, self._W.T))


class ReLU(Layer):
    """``max(x, 0)``; exact in every format, so it needs no precision hook."""

    def __init__(self, name: str = "relu"):
        super().__init__(name)

    def forward(self, x):
        self._positive = x > 0
        return np.where(self._positive, x, np.zeros((), x.dtype))

    def backward(self, dy):
        return np.where(self._positive, dy, np.zeros((), dy.dtype))


class Flatten(Layer):
    """(batch, ...) -> (batch, features), so a convolution can feed a dense layer."""

    def __init__(self, name: str = "flatten"):
        super().__init__(name)

    def forward(self, x):
        self._shape = x.shape
        return x.reshape(x.shape[0], -1)

    def backward(self, dy):
        return dy.reshape(self._shape)


class Conv2d(_Parametric):
    """A stride-1 2-D convolution (cross-correlation, as in every framework) lowered to one GEMM by im2col.

    Input (batch, in_channels, H, W); kernel ``W`` (out_channels, in_channels, k, k); zero padding ``padding``
    on each side; output (batch, out_channels, H + 2 padding - k + 1, W + 2 padding - k + 1).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, rng: np.random.Generator,
                 padding: int = 0, name: str = "conv", dtype=np.float32):
        super().__init__(name)
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels),
                       ("kernel_size", kernel_size)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{arg}: expected a positive integer, got {v!r}")
        if not isinstance(padding, (int, np.integer)) or padding < 0:
            raise ValueError(f"padding: expected a non-negative integer, got {padding!r}")
        self.c_in, self.c_out, self.k, self.padding = in_channels, out_channels, kernel_size, padding
        fan_in = in_channels * kernel_size * kernel_size
        W = rng.standard_normal((out_channels, in_channels, kernel_size, kernel_size)) * np.sqrt(2.0 / fan_in)
        self.params = {"W": W.astype(dtype), "b": np.zeros(out_channels, dtype)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != self.c_in:
            raise ValueError(f"{self.name}: input has shape {x.shape}, expected (batch, {self.c_in}, H, W)")
        p, k = self.padding, self.k
        if x.shape[2] + 2 * p < k or x.shape[3] + 2 * p < k:
            raise ValueError(f"{self.name}: input has shape {x.shape}, smaller than the {k}x{k} kernel "
                             f"with padding {p}")
        x, W = self._cast_forward(x, self.params["W"])
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x
        n, c = x.shape[:2]
        windows = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))  # (n, c, Ho, Wo, k, k)
        ho, wo = windows.shape[2:4]
        cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * k * k)  # im2col
        Wmat = W.reshape(self.c_out, c * k * k)
        self._cols, self._Wmat, self._xshape = cols, Wmat, (n, c, ho, wo, xp.shape)
        y = matmul(cols, Wmat.T) + self._round(self.params["b"])  # (n*Ho*Wo, c_out): the one GEMM
        return self._round(y.reshape(n, ho, wo, self.c_out).transpose(0, 3, 1, 2))

    def backward(self, dy):
        n, c, ho, wo, padded_shape = self._xshape
        k, p = self.k, self.padding
        dy2 = self._round(dy).transpose(0, 2, 3, 1).reshape(n * ho * wo, self.c_out)
        self.grads["W"] = self._round(matmul(dy2.T, self._cols).reshape(self.params["W"].shape))
        self.grads["b"] = self._round(sum_rows(dy2))
        dcols = matmul(dy2, self._Wmat).reshape(n, ho, wo, c, k, k)
        dxp = np.zeros(padded_shape, dcols.dtype)
        for i in range(k):  # col2im: each kernel offset adds its slice back where it was read from
            for j in range(k):
                dxp[:, :, i:i + ho, j:j + wo] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
        dx = dxp[:, :, p:padded_shape[2] - p, p:padded_shape[3] - p] if p else dxp
        return self._round(dx)
