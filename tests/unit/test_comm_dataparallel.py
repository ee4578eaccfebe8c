"""The ring reducer: a drop-in reducer for scaledl.nn.train whose sum has the ring's fixed order."""

import numpy as np
import pytest

from scaledl.comm import dataparallel as D
from scaledl.comm import schedule as S
from scaledl.nn import SGD, mlp, sum_reducer, teacher_student, train


def test_flatten_round_trip():
    g = {"a.w": np.arange(6, dtype=np.float32).reshape(2, 3), "a.b": np.float32([7, 8])}
    v = D.flatten(g)
    assert v.tolist() == [0, 1, 2, 3, 4, 5, 7, 8]
    back = D.unflatten(v, g)
    assert list(back) == list(g) and all(np.array_equal(back[k], g[k]) for k in g)


def test_ring_reducer_is_the_exact_sum_on_integers_and_the_ring_order_on_floats():
    rng = np.random.default_rng(0)
    ints = [{"w": rng.integers(-100, 100, (3, 5)).astype(np.float32)} for _ in range(5)]
    assert np.array_equal(D.ring_reducer(ints)["w"], sum_reducer(ints)["w"])
    floats = [{"w": rng.standard_normal(7).astype(np.float32)} for _ in range(5)]
    want = S.allreduce([f["w"] for f in floats], "ring")[0]
    assert np.array_equal(D.ring_reducer(floats)["w"], want)


def test_training_with_the_ring_reducer_matches_the_worker_order_sum_closely():
    data = teacher_student(600, 200, seed=0)
    models = [mlp([16, 16, 4], seed=1) for _ in range(2)]
    for model, reducer in zip(models, (D.ring_reducer, sum_reducer)):
        train(model, data, steps=20, batch_size=50, workers=3, reducer=reducer, optimizer=SGD(lr=0.1))
    a, b = models[0].parameters(), models[1].parameters()
    for k in a:  # the same arithmetic in another order: float32 rounding apart, not more
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=64 * np.finfo(np.float32).eps)
    with pytest.raises(ValueError, match=r"one length"):
        D.ring_reducer([{"w": np.zeros(2)}, {"w": np.zeros(3)}])
