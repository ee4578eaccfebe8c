"""The two service curves chapter 17 serves: a Deep-Speech-2-like recurrent stack and an LLM decode step.

Both are :func:`scaledl.serve.service.roofline` models (datasheet rooflines, so lower bounds on a real GPU):

* :func:`rnn_service`: ``layers`` recurrent layers of ``hidden`` units, each time step one GEMM of the
  layer's input and its previous state, ``[x_t, h_{t-1}]`` (``2 hidden``) against ``W`` (``2 hidden x
  hidden``), run for ``steps`` time steps per request. The defaults (7 layers of 1,760 units, fp32 on a
  GTX Titan X) are of Deep Speech 2's size and era, not its exact architecture (which mixes convolutions,
  GRUs and bidirectional layers). Weights are re-read from DRAM every step, as a standard kernel does;
  chapter 18's persistent kernels remove exactly that traffic.
* :func:`llm_decode_service`: one token for each sequence in the batch through a 7B-class decoder; the
  weights are shared by the batch, each sequence's KV cache is not (``bytes_per_request``).

>>> s = rnn_service()
>>> round(s(1) * 1e3, 2), round(s(64) * 1e3, 2)         # ms per batch: 64 requests in 1.6x the time of one
(51.59, 84.1)
>>> d = llm_decode_service()
>>> round(d(1) * 1e3, 2), round(d(64) * 1e3, 2)
(4.17, 24.44)
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl._args import count
from scaledl.serve.service import Roofline, roofline


@dataclass(frozen=True)
class Repeated:
    """``steps`` back-to-back runs of one step's service model (a recurrent network over time)."""

    step: Roofline
    steps: int

    def __call__(self, b: int) -> float:
        return self.steps * self.step(b)


def rnn_service(hidden: int = 1760, layers: int = 7, steps: int = 100, *, device: str = "GTX Titan X",
                precision: str = "fp32") -> Repeated:
    """Seconds for a batch of ``b`` utterances of ``steps`` time steps through a recurrent stack (see above)."""
    h, n, t = count("hidden", hidden), count("layers", layers), count("steps", steps)
    return Repeated(roofline([(2 * h, h)] * n, device=device, precision=precision), t)


def llm_decode_service(d_model: int = 4096, layers: int = 32, context: int = 2048, *, device: str = "H100 SXM",
                       precision: str = "fp16") -> Roofline:
    """Seconds for one decode step of a batch of ``b`` sequences, each with ``context`` tokens of KV cache.

    Per layer: the QKV projection ``(d, 3d)``, the output projection ``(d, d)`` and a 4x MLP; the KV cache of
    ``2 x layers x context x d_model`` elements per sequence is read once per step (attention is a GEMV
    per sequence, so batching does not share it).
    """
    d, n, c = count("d_model", d_model), count("layers", layers), count("context", context)
    from scaledl.perf.roofline import BYTES_PER_ELEMENT

    kv_bytes = 2 * n * c * d * BYTES_PER_ELEMENT[precision]
    return roofline([(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)] * n, device=device, precision=precision,
                    bytes_per_request=kv_bytes)
