"""Gradient compression (Part V-b): compressors with per-worker state, behind one fixed interface.

``c = make_compressor(name, **options)``; ``msg = c.compress(grad)`` (optionally ``key=`` the tensor's
name); ``msg.decode()`` is the dense array the receiver adds, ``msg.nbytes`` its real encoded size;
error-feedback compressors ("topk", "dgc", "onebit") expose ``c.residual``.

========================  ==============================================  ==========================
name                      what (module)                                   options
========================  ==============================================  ==========================
``"none"``                the dense tensor (:mod:`.base`)                 --
``"topk"``                top-k with local accumulation (:mod:`.sparse`)  ratio, sampled
``"dgc"``                 Deep Gradient Compression (:mod:`.sparse`)      ratio, momentum, parts...
``"onebit"``              1-bit SGD, error feedback (:mod:`.quantize`)    --
``"terngrad"``            TernGrad (:mod:`.quantize`)                     clip_sigmas
``"qsgd"``                QSGD (:mod:`.quantize`)                         levels
``"stochastic_round"``    k-bit stochastic rounding (:mod:`.quantize`)    bits
========================  ==============================================  ==========================

Every compressor also takes ``seed``. :mod:`.reducer` makes them the reducer of data-parallel training;
:mod:`scaledl.comm.compression.sparse_allreduce` reduces sparse messages SparCML's way.

>>> import numpy as np
>>> c = make_compressor("topk", ratio=0.25)
>>> msg = c.compress(np.float32([0.1, -3.0, 0.2, 0.3]))
>>> msg.decode().tolist(), msg.nbytes, c.residual.tolist()
([0.0, -3.0, 0.0, 0.0], 8, [0.10000000149011612, 0.0, 0.20000000298023224, 0.30000001192092896])
>>> make_compressor("topk", ratio=0)
Traceback (most recent call last):
...
ValueError: ratio must be in (0, 1] (the fraction of elements sent), got 0
"""

from __future__ import annotations

from scaledl.comm.compression.base import Compressor, Identity
from scaledl.comm.compression.message import DenseMessage, Message, ScaledMessage, SignMessage, SparseMessage
from scaledl.comm.compression.quantize import QSGD, OneBit, StochasticRound, TernGrad
from scaledl.comm.compression.reducer import CompressedReducer, compressed_reducer
from scaledl.comm.compression.sparse import DGC, TopK

__all__ = ["make_compressor", "COMPRESSORS", "Compressor", "Message", "DenseMessage", "SparseMessage",
           "ScaledMessage", "SignMessage", "TopK", "DGC", "OneBit", "TernGrad", "QSGD", "StochasticRound",
           "CompressedReducer", "compressed_reducer"]

COMPRESSORS = {c.name: c for c in (Identity, TopK, DGC, OneBit, TernGrad, QSGD, StochasticRound)}


def make_compressor(name: str, **options) -> Compressor:
    """A new compressor (one worker's state) by ``name`` (see the table above).

    Raises:
        ValueError: an unknown name, or a bad option value (e.g. a ratio outside (0, 1]).
        TypeError: an option the compressor does not take.
    """
    if name not in COMPRESSORS:
        raise ValueError(f"name: unknown compressor {name!r}; expected one of {sorted(COMPRESSORS)}")
    try:
        return COMPRESSORS[name](**options)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise TypeError(f"{name!r} compressor: {e}") from None
        raise
