"""Data with no downloads: scikit-learn's bundled digits, and a teacher-student task of any size and noise.

Both come as a :class:`Dataset` of float32 features and int64 labels with a fixed split, so every chapter
that says "digits" trains on exactly the same 1,347 training and 450 test images.

The teacher-student task: inputs are standard normal vectors; a fixed random ReLU network (the teacher)
labels each by its largest output; a fraction ``noise`` of the labels (train and test alike) is then
replaced by a different class chosen at random. A student that learned the teacher perfectly still errs
on exactly that fraction, so ``noise`` is the irreducible (Bayes) error, known by construction. Training
sets are nested: the first n samples of a larger set are the smaller set, so a learning curve measures
the effect of more data and not of different data.

>>> d = digits()
>>> d.x_train.shape, d.x_test.shape, d.n_classes
((1347, 64), (450, 64), 10)
>>> t = teacher_student(n_train=100, noise=0.1)
>>> t.x_train.shape, t.n_classes
((100, 16), 4)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scaledl.nn.loss import check_labels
from scaledl.nn.ops import matmul, sum_rows

DIGITS_TEST_FRACTION = 0.25  # 450 of the 1,797 images: enough to resolve accuracy differences of ~1 %
DIGITS_SPLIT_SEED = 0


@dataclass(frozen=True)
class Dataset:
    """Features and integer labels, split once into train and test."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str = "data"
    image_shape: tuple | None = None  # (channels, H, W) when the features are flattened images

    def __post_init__(self):
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"x_{split} has shape {x.shape} but y_{split} has shape {y.shape}: "
                                 f"expected the same number of samples")
            check_labels(y, self.n_classes, name=f"y_{split}")

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    def subset(self, n_train: int, seed: int = 0) -> "Dataset":
        """The first ``n_train`` of a fixed, class-interleaved order of the training set (test set unchanged).

        Subsets are nested (a smaller one is a prefix of a larger one) and nearly stratified: the order
        deals out each class in proportion to its share, so even 10 digits contain one of each class.
        """
        if not isinstance(n_train, (int, np.integer)) or not (1 <= n_train <= self.n_train):
            raise ValueError(f"n_train: expected an integer in [1, {self.n_train}], got {n_train!r}")
        order = _interleaved_order(self.y_train, self.n_classes, seed)[:n_train]
        return replace(self, x_train=self.x_train[order], y_train=self.y_train[order])

    def as_images(self) -> "Dataset":
        """The same data with features reshaped to (N, channels, H, W), for convolutional models."""
        if self.image_shape is None:
            raise ValueError(f"{self.name}: the features are not images (image_shape is None)")
        return replace(self, x_train=self.x_train.reshape(-1, *self.image_shape),
                       x_test=self.x_test.reshape(-1, *self.image_shape))


def _interleaved_order(y, n_classes, seed):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    counts = np.bincount(y, minlength=n_classes)
    rank = np.empty(len(y))
    seen = np.zeros(n_classes, int)
    for i in perm:  # rank of each sample within its class, in the permuted order
        rank[i] = seen[y[i]]
        seen[y[i]] += 1
    key = (rank[perm] + 0.5) / counts[y[perm]]  # position of the sample along its class's share
    return perm[np.argsort(key, kind="stable")]


def digits(test_fraction: float = DIGITS_TEST_FRACTION, seed: int = DIGITS_SPLIT_SEED) -> Dataset:
    """scikit-learn's 8x8 handwritten digits (1,797 images, bundled), pixels scaled to [0, 1], stratified split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not (0 < test_fraction < 1):
        raise ValueError(f"test_fraction: expected a value in (0, 1), got {test_fraction!r}")
    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)  # pixel intensities are 0..16
    y = bunch.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    return Dataset(x_tr, y_tr, x_te, y_te, 10, "digits", (1, 8, 8))


def teacher_logits(x: np.ndarray, n_classes: int, teacher_hidden: int, seed: int) -> np.ndarray:
    """The teacher's outputs for inputs ``x``: a fixed random two-layer ReLU network, class-balanced."""
    rng = np.random.default_rng([seed, 0])
    d = x.shape[1]
    W1 = rng.standard_normal((d, teacher_hidden)) / np.sqrt(d)
    W2 = rng.standard_normal((teacher_hidden, n_classes)) / np.sqrt(teacher_hidden)
    reference = rng.standard_normal((4096, d))
    # Centre each output on its mean over a reference sample so no class dominates the argmax.
    centre = sum_rows(matmul(np.maximum(matmul(reference, W1), 0), W2)) / len(reference)
    return matmul(np.maximum(matmul(x, W1), 0), W2) - centre  # fixed-order products: same labels on any CPU


def teacher_student(n_train: int, n_test: int = 4000, *, n_features: int = 16, n_classes: int = 4,
                    noise: float = 0.0, teacher_hidden: int = 32, seed: int = 0) -> Dataset:
    """A classification task labelled by a random teacher network, with ``noise`` label noise.

    Args:
        n_train, n_test: sample counts (>= 1).
        n_features: input dimension.
        n_classes: number of classes (>= 2).
        noise: fraction of labels replaced by another class, in [0, 1 - 1/n_classes]; the Bayes error.
        teacher_hidden: width of the teacher's hidden layer (its complexity).
        seed: fixes the teacher and both samples.
    """
    for arg, v, lo in (("n_train", n_train, 1), ("n_test", n_test, 1), ("n_features", n_features, 1),
                       ("n_classes", n_classes, 2), ("teacher_hidden", teacher_hidden, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{arg}: expected an integer >= {lo}, got {v!r}")
    if not (0 <= noise <= 1 - 1 / n_classes):
        raise ValueError(f"noise: expected a fraction in [0, {1 - 1 / n_classes:g}], got {noise!r}")

    def sample(n, stream):
        rng = np.random.default_rng([seed, stream])
        x = rng.standard_normal((n, n_features))
        # Separate streams for flips and replacement classes keep samples nested across n.
        flip = np.random.default_rng([seed, stream, 1]).random(n) < noise
        shift = np.random.default_rng([seed, stream, 2]).integers(1, n_classes, n)
        y = teacher_logits(x, n_classes, teacher_hidden, seed).argmax(axis=1)
        y = np.where(flip, (y + shift) % n_classes, y)
        return x.astype(np.float32), y.astype(np.int64)

    x_tr, y_tr = sample(n_train, 1)
    x_te, y_te = sample(n_test, 2)
    return Dataset(x_tr, y_tr, x_te, y_te, n_classes, f"teacher-student(noise={noise:g})")
