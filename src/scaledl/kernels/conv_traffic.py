"""Arithmetic intensity of a convolutional layer, and of the dense layer holding the same weights (NumPy only).

A convolution applies every weight at every output position, so each weight fetched from memory feeds
``P Q`` multiply-adds per image where a dense layer's weight feeds one. That is why SVAIL's talk (seed 001)
says convolutional layers are "even more compute bound" than the GEMMs of fully connected layers.

The layer maps ``C`` input channels to ``K`` output channels with ``R x S`` filters over a ``P x Q`` output
(the input is ``(P + R - 1) x (Q + S - 1)``, i.e. already padded), for ``batch`` images. Bytes are the
compulsory ones: input, weights and output each moved once, as a kernel with perfect on-chip reuse would.

>>> layer = conv_layer(64, 64, 56, 56)
>>> layer.flops, round(layer.intensity_FLOP_per_byte, 1)
(231211008, 127.6)
>>> round(layer.as_dense().intensity_FLOP_per_byte, 2)   # the same 36,864 weights as a dense layer, batch 1
0.49
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl.perf.roofline import LayerGemm

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class ConvLayer:
    """One convolutional layer's shape; FLOPs, compulsory bytes and intensity are derived."""

    C: int
    K: int
    P: int
    Q: int
    R: int = 3
    S: int = 3
    batch: int = 1
    element_bytes: int = FLOAT32_BYTES

    def __post_init__(self):
        for name in ("C", "K", "P", "Q", "R", "S", "batch", "element_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")

    @property
    def weights(self) -> int:
        return self.K * self.C * self.R * self.S

    @property
    def input_elements(self) -> int:
        return self.batch * self.C * (self.P + self.R - 1) * (self.Q + self.S - 1)

    @property
    def output_elements(self) -> int:
        return self.batch * self.K * self.P * self.Q

    @property
    def flops(self) -> int:
        """A multiply and an add per filter tap, per input channel, per output value."""
        return 2 * self.weights * self.P * self.Q * self.batch

    @property
    def bytes_moved(self) -> int:
        return (self.input_elements + self.weights + self.output_elements) * self.element_bytes

    @property
    def intensity_FLOP_per_byte(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def weight_reuse(self) -> int:
        """Multiply-adds each weight takes part in: every output position of every image."""
        return self.P * self.Q * self.batch

    def as_dense(self) -> LayerGemm:
        """The fully connected layer with the same weights (``C R S`` inputs, ``K`` outputs), same batch,
        as :func:`scaledl.perf.roofline.dense_layer` models it (Chapter 03)."""
        return LayerGemm(self.C * self.R * self.S, self.K, self.batch, self.element_bytes)


def conv_layer(C: int, K: int, P: int, Q: int, R: int = 3, S: int = 3, batch: int = 1,
               element_bytes: int = FLOAT32_BYTES) -> ConvLayer:
    """A :class:`ConvLayer` (checked: every size a positive int).

    Raises:
        ValueError: a size that is not a positive int.
    """
    return ConvLayer(C, K, P, Q, R, S, batch, element_bytes)


__all__ = ["ConvLayer", "conv_layer"]
