"""Lab 06's task specs: each judge passes the solution's own code, and fails classic bugs and hostile outputs.

The correct "student" is the solution notebook's answer cells, executed here, so these tests follow the
solution rather than a copy of it. Outputs go through :func:`scaledl.course.exchange.roundtrip` first, so the
judges see the types the grader will (JSON lists, arrays read back from .npz).
"""

import math
import re
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

from scaledl.course import exchange, tasks
from scaledl.course.tasks import lab06

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import rejected  # noqa: E402

NOTEBOOK = Path(__file__).parents[2] / "labs" / "solutions" / "lab06_deep_gradient_compression.ipynb"
TASKS = tasks.for_lab("lab06")
QUICK = [g for g in TASKS if g != "task_3_2"]  # task 3.2 trains a model (seconds): tested on its own below


def solution_namespace() -> dict:
    """The solution's top_k, TopKEF, DGCCompressor, CompressedReducer, and Task 3.2's ratio and optimizer."""
    from scaledl.nn import SGD

    ns = {"np": np, "math": math, "SGD": SGD}
    for cell in nbformat.read(NOTEBOOK, as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id == "answer_task_3_2":  # only its solution lines: the rest of the cell trains
            block = re.search(r"### BEGIN SOLUTION.*?\n(.*?)[ \t]*### END SOLUTION", cell.source, re.S).group(1)
            exec(textwrap.dedent(block), ns)  # (inside the cell's `with task("Task 3.2"):` block)
        elif grade_id.startswith("answer_task_"):
            exec(cell.source, ns)
    return ns


def produced(grade_id, ns, seed):
    task = TASKS[grade_id]
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)))
    return inp, exchange.roundtrip(task.produce(ns, inp))


def rejects(grade_id, inp, out, match=None):
    rejected(TASKS[grade_id], inp, out, match)


@pytest.fixture(scope="module")
def ns():
    return solution_namespace()


# ------------------------------------------------------------------------------------------- the table
def test_tasks_follow_the_notebook():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    assert list(TASKS) == graded
    assert [t.local_seed for t in TASKS.values()] == list(range(150601, 150607))
    library = ("scaledl.comm.compression", "scaledl.labs.dgc_checks")
    for g in QUICK:  # Task 1.1 forbids the reference top-k too; 1.2-2.2 need it, as the stand-in for 1.1
        assert TASKS[g].forbidden_modules == (library + ("scaledl.labs.top_k_spec",) if g == "task_1_1" else library)
        assert TASKS[g].needs == (("scaledl.labs.top_k_spec",) if g in ("task_1_2", "task_2_1", "task_2_2") else ())


# ------------------------------------------------------------------------------- (a) correct answers pass
@pytest.mark.parametrize("grade_id", QUICK)
@pytest.mark.parametrize("seed", [0, 1, 2, 150601])
def test_judge_accepts_the_solution(grade_id, seed, ns):
    TASKS[grade_id].judge(*produced(grade_id, ns, seed))


@pytest.mark.parametrize("grade_id", ["task_1_2", "task_2_1", "task_2_2"])
def test_graded_on_their_own_with_the_reference_top_k(grade_id, ns):
    """A wrong top_k (signed, not |v|) costs Task 1.1 only; produce puts the student's top_k back."""
    mine = dict(ns)

    def signed_top_k(v, k):
        return np.sort(np.argsort(-v, kind="stable")[:k])

    mine["top_k"] = signed_top_k
    TASKS[grade_id].judge(*produced(grade_id, mine, 3))
    assert mine["top_k"] is signed_top_k
    rejects("task_1_1", *produced("task_1_1", mine, 3), "Yours")


# -------------------------------------------------------------------------------- (b) classic bugs fail
def with_(ns, **objects):
    mine = dict(ns)
    mine.update(objects)
    return mine


def test_top_k_bugs(ns):
    def signed(v, k):
        return np.sort(np.argsort(-v, kind="stable")[:k])

    def ties_to_higher(v, k):
        n = len(v)
        return np.sort(n - 1 - np.argsort(-np.abs(v[::-1]), kind="stable")[:k])

    def unsorted(v, k):
        return np.argsort(-np.abs(v), kind="stable")[:k]

    for bug in (signed, ties_to_higher, unsorted):
        rejects("task_1_1", *produced("task_1_1", with_(ns, top_k=bug), 4), "Yours .*Spec")


def test_error_feedback_bugs(ns):
    base = ns["TopKEF"]

    class NoClear(base):  # sends but keeps the sent values in the residual: counted twice
        def compress(self, grad, key=""):
            idx, values = super().compress(grad, key)
            self.residuals[key].reshape(-1)[idx] = values
            return idx, values

    class Drop(base):  # no local accumulation: what was not sent is lost
        def compress(self, grad, key=""):
            message = super().compress(grad, key)
            self.residuals[key][...] = 0
            return message

    for bug in (NoClear, Drop):
        rejects("task_1_2", *produced("task_1_2", with_(ns, TopKEF=bug), 5), "differ")


def test_dgc_bugs(ns):
    base = ns["DGCCompressor"]

    class NoCorrection(base):  # accumulates g, not the velocity: SGD without momentum
        def compress(self, grad, key=""):
            self.velocity.setdefault(key, np.zeros_like(grad))[...] = 0
            return super().compress(grad, key)

    class NoMasking(base):
        def __init__(self, ratio, momentum=0.9, masking=True):
            super().__init__(ratio, momentum, masking=False)

    class AlwaysMask(base):
        def __init__(self, ratio, momentum=0.9, masking=True):
            super().__init__(ratio, momentum, masking=True)

    rejects("task_2_1", *produced("task_2_1", with_(ns, DGCCompressor=NoCorrection), 6), "differ")
    rejects("task_2_1", *produced("task_2_1", with_(ns, DGCCompressor=AlwaysMask), 6), "differ")
    rejects("task_2_2", *produced("task_2_2", with_(ns, DGCCompressor=NoMasking), 6), "differ")
    TASKS["task_2_1"].judge(*produced("task_2_1", with_(ns, DGCCompressor=NoMasking), 6))  # 2.1: masking off


def test_reducer_bugs(ns):
    base = ns["CompressedReducer"]

    class ValuesOnly(base):  # counts the values but not the indices: 4 bytes per element
        def __call__(self, worker_grads):
            out = super().__call__(worker_grads)
            self.sent_bytes[-1] //= 2
            return out

    class FirstWorker(base):  # the first worker's message only
        def __call__(self, worker_grads):
            return base.__call__(self, worker_grads[:1] * len(worker_grads))

    class NoKey:
        def __init__(self, compressors):
            self.inner = base([_Keyless(c) for c in compressors])
            self.sent_bytes, self.dense_bytes = self.inner.sent_bytes, self.inner.dense_bytes

        def __call__(self, worker_grads):
            return self.inner(worker_grads)

    class _Keyless:  # calls compress(grad) without the tensor's name: residuals would mix across tensors
        def __init__(self, c):
            self.c = c

        def compress(self, grad, key=""):
            return self.c.compress(grad)

    rejects("task_3_1", *produced("task_3_1", with_(ns, CompressedReducer=ValuesOnly), 7), "bytes")
    rejects("task_3_1", *produced("task_3_1", with_(ns, CompressedReducer=FirstWorker), 7), "workers. decoded")
    rejects("task_3_1", *produced("task_3_1", with_(ns, CompressedReducer=NoKey), 7), "keys")


# ---------------------------------------------------------------------------- (c) hostile outputs fail
def hostile(out):
    """Variants of ``out``: each key missing, and every value replaced by junk of some kind."""
    for key in out:
        yield {k: v for k, v in out.items() if k != key}

    def every(f):
        return {k: f(v) for k, v in out.items()}

    def grow(v):
        return np.append(v, v.ravel()[:1]) if isinstance(v, np.ndarray) and v.size else [1, 2]

    yield every(lambda v: np.zeros_like(v) if isinstance(v, np.ndarray) else 0)
    yield every(lambda v: np.full(v.shape, np.nan) if isinstance(v, np.ndarray) else float("nan"))
    yield every(lambda v: np.full(v.shape, 1e300) if isinstance(v, np.ndarray) else 10 ** 400)
    yield every(grow)
    yield every(lambda v: np.zeros(0))
    yield every(lambda v: "junk")
    yield every(lambda v: None)
    yield every(lambda v: [[1], [1, 2]])          # ragged
    yield every(lambda v: [10 ** 400, "x"])       # an int no float holds, and a string
    yield every(lambda v: np.array(["a", "b"]))   # strings read back from .npz
    yield {}


@pytest.mark.parametrize("grade_id", QUICK)
def test_hostile_outputs_are_assertion_errors(grade_id, ns):
    inp, out = produced(grade_id, ns, 8)
    for bad in hostile(out):
        rejects(grade_id, inp, bad)


def test_reducer_keys_as_an_array_are_rejected(ns):
    inp, out = produced("task_3_1", ns, 9)
    rejects("task_3_1", inp, {**out, "keys": np.array(out["keys"])}, "keys")


# --------------------------------------------------------------------------- (d) fresh inputs per seed
@pytest.mark.parametrize("grade_id", list(TASKS))
def test_inputs_differ_between_seeds(grade_id):
    make = TASKS[grade_id].make_inputs
    drawn = [make(np.random.default_rng(s)) for s in range(6)]

    def same(a, b):
        return a.keys() == b.keys() and all(
            np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a)

    assert not all(same(drawn[0], d) for d in drawn[1:])
    assert not same(drawn[0], drawn[1]) or grade_id == "task_3_2"  # 3.2 draws one seed from a short list


def test_inputs_are_odd_and_exact():
    inp = TASKS["task_1_1"].make_inputs(np.random.default_rng(0))
    assert [inp[f"v{i}"].size for i in range(4)][0] == 1 and inp["v1"].size % 2 == 1
    inp = TASKS["task_1_2"].make_inputs(np.random.default_rng(0))
    g = inp["grads0"]
    assert g.dtype == np.float32 and np.array_equal(g * 8, np.round(g * 8)) and g.shape[1] % 2 == 1


# ------------------------------------------------------------------------- Task 3.2: one training run each
@pytest.fixture(scope="module")
def trained(ns):
    return produced("task_3_2", ns, 150606)


def test_training_passes(trained):
    TASKS["task_3_2"].judge(*trained)


def test_training_rejects_a_low_compression(ns):
    mine = with_(ns, ratio=0.02)  # 2 %: about 50x, short of the 100x asked for
    rejects("task_3_2", *produced("task_3_2", mine, 150606), "compression")


def test_training_rejects_forged_or_broken_results(trained):
    inp, out = trained
    zeros = {k: np.zeros_like(v) if k.startswith("weight ") else v for k, v in out.items()}
    rejects("task_3_2", inp, zeros, "accuracy")                       # untrained weights
    rejects("task_3_2", inp, {**out, "steps": 30 * 22 + 1}, "steps")      # more than 30 epochs of 22 batches
    rejects("task_3_2", inp, {**out, "steps": 0}, "steps")
    rejects("task_3_2", inp, {**out, "steps": 100}, "exchanges")          # fewer steps than exchanges recorded
    rejects("task_3_2", inp, {**out, "sent_bytes": []}, "exchanges")
    rejects("task_3_2", inp, {**out, "sent_bytes": [0] * len(out["sent_bytes"])}, "exchanges")
    for bad in hostile(out):
        rejects("task_3_2", inp, bad)


def test_training_seeds_are_the_verified_ones():
    seeds = {TASKS["task_3_2"].make_inputs(np.random.default_rng(s))["seed"] for s in range(50)}
    assert seeds <= set(lab06.TRAIN_SEEDS) and len(seeds) > 10
