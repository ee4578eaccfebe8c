"""A small NumPy neural-network library written for reading; the training substrate every chapter shares.

Everything is float32 NumPy with hand-written backward passes, fast enough to train a 64-256-256-10 MLP
on the bundled digits in a few seconds on a laptop CPU, and small enough to read in an afternoon.

The API (stable: later chapters build on it)
-------------------------------------------
Data (:mod:`~scaledl.nn.data`)
    ``digits()`` 8x8 digits, fixed stratified split (1,347 train / 450 test); ``teacher_student(n_train,
    noise=...)`` a synthetic task of any size whose Bayes error is ``noise``; ``Dataset.subset(n)`` nested,
    nearly stratified training subsets; ``Dataset.as_images()`` for convolutions.
Models (:mod:`~scaledl.nn.model`, :mod:`~scaledl.nn.layers`)
    ``mlp([64, 256, 256, 10], seed=0)``, ``small_cnn()``, ``Sequential([Dense, ReLU, Conv2d, Flatten])``.
    ``model.parameters()`` / ``model.gradients()``: ``{"fc1.W": array, ...}`` holding the layers' own arrays.
    ``model.loss_and_gradients(x, y)``, ``model.predict(x)``, ``model.copy()``, ``model.load_parameters(d)``.
Training (:mod:`~scaledl.nn.train`, :mod:`~scaledl.nn.optim`)
    ``train(model, data, epochs=.. | steps=.., batch_size, optimizer=SGD(lr, momentum, weight_decay,
    schedule), seed, ...) -> History``; schedules ``constant()``, ``step_decay(every, gamma)``,
    ``warmup(steps, then=...)``, ``cosine(total)``; ``evaluate(model, x, y) -> (loss, accuracy)``.
Hooks for the later parts
    * gradient transform: ``train(..., grad_transform=lambda grads: grads)`` before every update;
    * masks (pruning): ``model.set_masks({"fc1.W": bool array})``, kept through training;
    * fake quantization: ``model.set_fake_quant(weights=fn, activations=fn)``, straight-through gradients;
    * precision policy: ``train(..., precision="fp16" | "bf16" | callable | Precision(round, loss_scale=..,
      dynamic=True))`` (dynamic loss scaling backs off on overflow and grows after calm steps),
      forward and backward rounded to the format, float32 master weights and softmax;
    * data parallel: ``train(..., workers=N, reducer=sum_reducer)``: each minibatch split over N simulated
      workers, each worker's gradient weighted by its share, combined by the reducer (a list of dicts -> dict).
Checks (:mod:`~scaledl.nn.gradcheck`)
    ``max_gradient_error(model, x, y)``: backward pass vs float64 central differences.

Example
-------
>>> from scaledl.nn import SGD, digits, mlp, train
>>> data = digits()
>>> model = mlp([64, 128, 10], seed=0)
>>> history = train(model, data, epochs=5, batch_size=32, optimizer=SGD(lr=0.05, momentum=0.9), seed=0)
>>> history.test_accuracy[-1] > 0.95
True
>>> sorted(model.parameters())
['fc1.W', 'fc1.b', 'fc2.W', 'fc2.b']
"""

from scaledl.nn.ctc import ctc_loss  # noqa: F401  (CTC, chapter 18; not in __all__ to keep this a one-line change)
from scaledl.nn.data import Dataset, digits, teacher_student
from scaledl.nn.gradcheck import max_gradient_error, numerical_gradients
from scaledl.nn.layers import Conv2d, Dense, Flatten, Layer, ReLU
from scaledl.nn.loss import accuracy, softmax_cross_entropy
from scaledl.nn.model import Sequential, mlp, small_cnn
from scaledl.nn.optim import SGD, constant, cosine, step_decay, warmup
from scaledl.nn.parallel import data_parallel_gradients, sum_reducer
from scaledl.nn.precision import Precision, as_precision, round_bf16, round_fp16
from scaledl.nn.train import History, evaluate, train

__all__ = [
    "Dataset", "digits", "teacher_student",
    "Layer", "Dense", "ReLU", "Flatten", "Conv2d", "Sequential", "mlp", "small_cnn",
    "softmax_cross_entropy", "accuracy",
    "SGD", "constant", "step_decay", "warmup", "cosine",
    "train", "evaluate", "History",
    "sum_reducer", "data_parallel_gradients",
    "Precision", "as_precision", "round_fp16", "round_bf16",
    "numerical_gradients", "max_gradient_error",
]
