"""The CTC digit-strip task: strips are built right, decoding is CTC's collapse, and training with ctc_loss
learns to read unseen strips (chance: 1 in 1,000 for three digits)."""

import numpy as np
import pytest

from scaledl.nn.ctc_task import N_CLASSES, digit_strips, greedy_decode, train_ctc_reader


def test_strips_and_frames():
    t = digit_strips(n_train=20, n_test=5, digits_per_strip=2, max_gap=1, window=8, stride=2, seed=3)
    width = 8 * 2 + 1 * 3
    assert t.x_train.shape == (20, (width - 8) // 2 + 1, 64) and t.y_train.shape == (20, 2)
    assert t.x_train.dtype == np.float32 and 0 <= t.x_train.min() and t.x_train.max() <= 1
    assert np.array_equal(digit_strips(n_train=20, n_test=5, digits_per_strip=2, max_gap=1, seed=3).x_train,
                          t.x_train)  # seeded
    with pytest.raises(ValueError, match="window must be in \\[1, 16\\] and stride >= 1, got window=20"):
        digit_strips(n_train=2, n_test=2, digits_per_strip=2, window=20)


def test_greedy_decode_is_ctc_collapse():
    frames = [0, 3, 3, 0, 0, 3, 1, 1, 0]  # blank, 2, 2, blank, blank, 2, 0, 0, blank
    assert greedy_decode(np.log(np.eye(N_CLASSES)[frames] + 1e-6)) == [2, 2, 0]


def test_training_with_ctc_reads_unseen_strips():
    task = digit_strips(n_train=300, n_test=100, seed=0)
    _, history = train_ctc_reader(task, epochs=8, seed=0)
    assert history[-1]["train_ctc_loss"] < history[0]["train_ctc_loss"] / 5
    assert history[-1]["test_sequence_accuracy"] >= 0.5  # measured 0.64 here; chance is 0.001


def test_strip_image_undoes_framing():
    from scaledl.nn.ctc_task import _frames, strip_image

    strips = np.random.default_rng(0).random((2, 8, 20)).astype(np.float32)
    framed = _frames(strips, 8, 2)
    assert np.array_equal(strip_image(framed[1]), strips[1])
    with pytest.raises(ValueError, match="frames must have shape \\(frames, 64\\)"):
        strip_image(framed[1][:, :10])
