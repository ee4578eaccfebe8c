"""Lab 06's checks of the compressed exchange: the reducer that sums workers' messages, its bytes on the
wire, and data-parallel training that must still reach its accuracy."""

from __future__ import annotations

import sys

import numpy as np

from scaledl.labs.check import CheckResult
from scaledl.labs.hints import hint
from scaledl.labs.dgc_checks.spec import BYTES_PER_SENT, _differences, _hint


# ------------------------------------------------------------------------------------------- reducer
class _Scripted:
    """A stand-in compressor whose messages are fixed in advance (per call), so the reducer check does not
    depend on the student's compressors."""

    def __init__(self, worker: int):
        self.worker, self.calls = worker, []

    def compress(self, grad, key=""):
        self.calls.append(key)
        n = np.asarray(grad).size
        idx = np.arange(self.worker % n, n, 3)[: 1 + self.worker % 2]
        return idx, np.asarray(grad).ravel()[idx] * np.float32(self.worker + 1)


def check_reducer(make_reducer, *, report=sys.stdout) -> CheckResult:
    """``make_reducer(compressors)`` must return a reducer for :func:`scaledl.nn.train`: called with one dict
    of gradients per worker, it has worker w's compressor compress each of w's tensors, adds the decoded
    messages, and appends the bytes all workers sent in the step (8 per sent element) to ``sent_bytes`` and
    the dense float32 bytes they would have sent to ``dense_bytes``."""
    result = CheckResult("compressed reducer")
    workers = 3
    comps = [_Scripted(w) for w in range(workers)]
    rng = np.random.default_rng(5)
    grads = [{"fc.W": rng.integers(-8, 9, (4, 5)).astype(np.float32),
              "fc.b": rng.integers(-8, 9, 5).astype(np.float32)} for _ in range(workers)]
    red = make_reducer(comps)
    out = red([{k: v.copy() for k, v in g.items()} for g in grads])
    spec, nnz = {}, 0
    for name in grads[0]:
        total = np.zeros_like(grads[0][name])
        for w, g in enumerate(grads):
            idx, vals = _Scripted(w).compress(g[name], name)
            flat = np.zeros(g[name].size, np.float32)
            flat[idx] = vals
            total += flat.reshape(g[name].shape)
            nnz += idx.size
        spec[name] = total
    for name in spec:
        got = np.asarray(out.get(name, np.full(spec[name].shape, np.nan)) if isinstance(out, dict) else np.nan)
        if got.shape == spec[name].shape and np.array_equal(got, spec[name]):
            result.lines.append(f"ok   {name}: the sum of 3 workers' decoded messages")
        else:
            result.passed = False
            result.lines.append(f"FAIL {name}: not the sum of the workers' decoded messages")
            if got.shape == spec[name].shape:
                result.lines += _differences(got, spec[name], name)
            else:
                result.lines.append(f"    Yours: {got!r}  Spec: shape {spec[name].shape}")
            _hint(result, hint("lab06", "reducer_sum"))
    if any(c.calls != list(grads[0]) for c in comps):
        result.passed = False
        result.lines.append(f"FAIL compress() calls per worker: {[c.calls for c in comps]}; expected one per "
                            f"tensor, with its name as key: {list(grads[0])}")
        _hint(result, hint("lab06", "reducer_keys"))
    sent = list(getattr(red, "sent_bytes", []))
    dense = list(getattr(red, "dense_bytes", []))
    want_dense = workers * 4 * sum(g.size for g in grads[0].values())
    if sent == [BYTES_PER_SENT * nnz] and dense == [want_dense]:
        result.lines.append(f"ok   bytes: sent_bytes {sent}, dense_bytes {dense}")
    else:
        result.passed = False
        result.lines.append(f"FAIL bytes after one step:  Yours: sent_bytes {sent}, dense_bytes {dense}  "
                            f"Spec: [{BYTES_PER_SENT * nnz}], [{want_dense}]")
        _hint(result, hint("lab06", "reducer_bytes"))
    return result.finish("the reducer's sum and byte count", report=report)


def compression_ratio(reducer, steps: int | None = None) -> float:
    """Dense float32 bytes over encoded bytes, over the last ``steps`` steps (all when None)."""
    sent, dense = reducer.sent_bytes, reducer.dense_bytes
    if steps is not None:
        sent, dense = sent[-steps:], dense[-steps:]
    return sum(dense) / sum(sent) if sum(sent) else float("nan")


def check_compressed_training(model, data, reducer, *, steps: int, target_accuracy: float = 0.96,
                              min_ratio: float = 100.0, report=sys.stdout) -> CheckResult:
    """The trained ``model`` reaches ``target_accuracy`` on ``data``'s test set while ``reducer`` (from
    Task 3.1) recorded between 1 and ``steps`` exchanges (``History.steps``; :func:`scaledl.nn.train` skips a
    trailing minibatch smaller than the number of workers) that sent ``min_ratio`` times fewer bytes than
    dense float32."""
    from scaledl.nn.train import evaluate

    result = CheckResult("compressed training")
    acc = evaluate(model, data.x_test, data.y_test)[1]
    ok = acc >= target_accuracy
    result.passed &= ok
    result.lines.append(f"{'ok  ' if ok else 'FAIL'} test accuracy {100 * acc:.2f} % (needed: "
                        f"{100 * target_accuracy:.1f} %)")
    recorded = len(reducer.sent_bytes)
    ratio = compression_ratio(reducer)
    ok = 0 < recorded <= steps and len(reducer.dense_bytes) == recorded and min(reducer.sent_bytes, default=0) > 0
    result.passed &= ok
    if not ok:
        result.lines.append(f"FAIL the reducer recorded {recorded} exchanges with bytes {reducer.sent_bytes[:3]}...; "
                            f"training took {steps} steps (a trailing minibatch smaller than the number of "
                            "workers is skipped), and each exchange must send something")
        _hint(result, hint("lab06", "training_reducer"))
    ok = ok and ratio >= min_ratio
    result.passed &= ok
    result.lines.append(f"{'ok  ' if ok else 'FAIL'} compression {ratio:.1f}x over the whole run, from the "
                        f"encoded bytes (needed: {min_ratio:g}x)")
    if not result.passed and not result.hints:
        _hint(result, hint("lab06", "training_momentum"))
    return result.finish("compressed data-parallel training", report=report)
