"""A model is a :class:`Sequential` list of layers, with named parameters, masks and numerics hooks.

Parameters and gradients are exposed as flat dicts ``{"fc1.W": array, "fc1.b": array, ...}`` that hold
the layers' own arrays (no copies), so a chapter can read, prune or overwrite them in place.

>>> import numpy as np
>>> model = mlp([64, 32, 10], seed=0)
>>> model
Sequential(fc1(64->32), relu1, fc2(32->10); 2,410 parameters)
>>> sorted(model.parameters())
['fc1.W', 'fc1.b', 'fc2.W', 'fc2.b']
>>> loss, grads = model.loss_and_gradients(np.zeros((5, 64), np.float32), np.arange(5))
>>> grads["fc2.W"].shape
(32, 10)
"""

from __future__ import annotations

import copy as _copy
from typing import Callable

import numpy as np

from scaledl.nn.layers import Conv2d, Dense, Flatten, Layer, ReLU, _Parametric
from scaledl.nn.loss import softmax_cross_entropy


class Sequential:
    """Layers applied in order; the last one produces the logits.

    Attributes:
        layers: the :class:`~scaledl.nn.layers.Layer` objects, with unique names.
        masks: ``{parameter name: boolean array}``; a masked-out entry is held at zero through training
            (see :meth:`set_masks`). Empty by default.
    """

    def __init__(self, layers: list[Layer]):
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layers: names must be unique, got {names}")
        self.layers = list(layers)
        self.masks: dict[str, np.ndarray] = {}
        self._precision = None

    # -- the computation ---------------------------------------------------------------------------------
    def forward(self, x: np.ndarray) -> np.ndarray:
        """Logits for a batch ``x``; caches what :meth:`backward` needs."""
        for layer in self.layers:
            x = layer.forward(x)
        return x

    __call__ = forward

    def backward(self, dlogits: np.ndarray) -> np.ndarray:
        """Back-propagate d loss / d logits; fills every layer's ``grads``; returns d loss / d input."""
        for layer in reversed(self.layers):
            dlogits = layer.backward(dlogits)
        return dlogits

    def loss_and_gradients(self, x, labels, *, scale: float = 1.0) -> tuple[float, dict[str, np.ndarray]]:
        """Mean softmax cross-entropy on (x, labels) and its gradients, multiplied by ``scale``.

        ``scale`` is applied to d loss / d logits before the backward pass: data-parallel workers use it to
        weight their shard (n_k / B), mixed precision uses it as the loss scale.
        """
        logits = self.forward(x)
        loss, dlogits = softmax_cross_entropy(logits, labels)
        if scale != 1.0:
            dlogits = dlogits * np.asarray(scale, dlogits.dtype)
        self.backward(dlogits.astype(logits.dtype, copy=False))
        return loss, self.gradients()

    def predict(self, x: np.ndarray, batch_size: int = 4096) -> np.ndarray:
        """Logits for any number of samples, in batches (no gradients are kept)."""
        return np.concatenate([self.forward(x[i:i + batch_size]) for i in range(0, len(x), batch_size)])

    # -- named parameters ----------------------------------------------------------------------------------
    def parameters(self) -> dict[str, np.ndarray]:
        """``{"layer.param": array}`` holding the layers' own arrays (edit in place to change the model)."""
        return {f"{layer.name}.{k}": v for layer in self.layers for k, v in layer.params.items()}

    def gradients(self) -> dict[str, np.ndarray]:
        """The gradients of the last backward pass, named as :meth:`parameters`."""
        return {f"{layer.name}.{k}": v for layer in self.layers for k, v in layer.grads.items()}

    def n_parameters(self) -> int:
        return int(sum(v.size for v in self.parameters().values()))

    def load_parameters(self, values: dict[str, np.ndarray]) -> None:
        """Copy ``values`` into the parameters of the same names (shapes must match)."""
        params = self.parameters()
        for name, v in values.items():
            if name not in params:
                raise ValueError(f"values: unknown parameter {name!r}; the model has {sorted(params)}")
            if np.shape(v) != params[name].shape:
                raise ValueError(f"values[{name!r}]: shape {np.shape(v)} does not match the parameter's "
                                 f"shape {params[name].shape}")
            params[name][...] = v

    def copy(self) -> "Sequential":
        """An independent deep copy (parameters, masks and hooks)."""
        return _copy.deepcopy(self)

    def astype(self, dtype) -> "Sequential":
        """A deep copy whose parameters have ``dtype`` (float64 for gradient checks)."""
        other = self.copy()
        for layer in other.layers:
            layer.params = {k: v.astype(dtype) for k, v in layer.params.items()}
            layer.grads = {k: np.zeros_like(v) for k, v in layer.params.items()}
        return other

    # -- hooks ---------------------------------------------------------------------------------------------
    def set_masks(self, masks: dict[str, np.ndarray]) -> None:
        """Keep ``param * mask`` through training (pruning); applies the masks at once.

        Replaces any earlier masks. The training loop zeroes masked gradients before the update and
        re-applies the masks after it, so a pruned weight stays exactly zero.
        """
        params = self.parameters()
        checked = {}
        for name, m in masks.items():
            if name not in params:
                raise ValueError(f"masks: unknown parameter {name!r}; the model has {sorted(params)}")
            m = np.asarray(m)
            if m.shape != params[name].shape:
                raise ValueError(f"masks[{name!r}]: shape {m.shape} does not match the parameter's shape "
                                 f"{params[name].shape}")
            checked[name] = m.astype(bool)
        self.masks = checked
        self.apply_masks()

    def apply_masks(self, arrays: dict[str, np.ndarray] | None = None) -> None:
        """Zero the masked entries of ``arrays`` (default: the parameters) in place."""
        arrays = self.parameters() if arrays is None else arrays
        for name, m in self.masks.items():
            if name in arrays:
                arrays[name] *= m

    def set_fake_quant(self, weights: Callable | None = None, activations: Callable | None = None,
                       layers: list[str] | None = None) -> None:
        """Fake-quantize the weights and/or the inputs of the dense and conv layers (``None`` removes).

        Each callable maps an array to its quantized value (same shape, float). Gradients pass straight
        through to the full-precision weights. ``layers`` restricts this to the named layers.
        """
        for layer in self._parametric(layers):
            layer.quantize_weight, layer.quantize_input = weights, activations

    @property
    def precision(self):
        """The :class:`~scaledl.nn.precision.Precision` the layers emulate, or None for plain float32."""
        return self._precision

    @precision.setter
    def precision(self, policy):
        from scaledl.nn.precision import as_precision

        policy = as_precision(policy)
        self._precision = policy
        for layer in self._parametric(None):
            layer.precision = policy

    def _parametric(self, names):
        chosen = [layer for layer in self.layers if isinstance(layer, _Parametric)]
        if names is not None:
            known = {layer.name for layer in chosen}
            unknown = set(names) - known
            if unknown:
                raise ValueError(f"layers: {sorted(unknown)} are not dense/conv layers; those are {sorted(known)}")
            chosen = [layer for layer in chosen if layer.name in names]
        return chosen

    def __repr__(self):
        def short(layer):
            if isinstance(layer, Dense):
                return f"{layer.name}({layer.n_in}->{layer.n_out})"
            if isinstance(layer, Conv2d):
                return f"{layer.name}({layer.c_in}->{layer.c_out}, {layer.k}x{layer.k})"
            return layer.name

        return f"Sequential({', '.join(short(x) for x in self.layers)}; {self.n_parameters():,} parameters)"


def mlp(sizes: list[int], *, seed: int = 0, dtype=np.float32) -> Sequential:
    """A ReLU multi-layer perceptron: ``mlp([64, 256, 256, 10])`` is 64 inputs, two hidden layers, 10 logits.

    Layers are named fc1, relu1, fc2, ..., fcN (no ReLU after the last).
    """
    sizes = list(sizes)
    if len(sizes) < 2 or any(not isinstance(s, (int, np.integer)) or s < 1 for s in sizes):
        raise ValueError(f"sizes: expected at least two positive integers (inputs ... outputs), got {sizes!r}")
    rng = np.random.default_rng(seed)
    layers: list[Layer] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        layers.append(Dense(a, b, rng=rng, name=f"fc{i}", dtype=dtype))
        if i < len(sizes) - 1:
            layers.append(ReLU(name=f"relu{i}"))
    return Sequential(layers)


def small_cnn(image_shape=(1, 8, 8), channels: int = 8, n_classes: int = 10, *, seed: int = 0,
              dtype=np.float32) -> Sequential:
    """conv3x3 (padding 1) -> ReLU -> flatten -> dense: the smallest convolutional net for 8x8 digits."""
    c, h, w = image_shape
    rng = np.random.default_rng(seed)
    return Sequential([
        Conv2d(c, channels, 3, padding=1, rng=rng, name="conv1", dtype=dtype),
        ReLU(name="relu1"),
        Flatten(name="flatten"),
        Dense(channels * h * w, n_classes, rng=rng, name="fc1", dtype=dtype),
    ])
