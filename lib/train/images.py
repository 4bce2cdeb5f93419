"""Bundled images as network inputs: scikit-learn's sample photographs, block-averaged.

Nothing can be downloaded when the book runs, so where a paper feeds a CIFAR-10 image the book
uses one of the photographs bundled with scikit-learn (``china.jpg``, ``flower.jpg``), cropped
to a square and block-averaged to a CIFAR-like size.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..core.device import DTYPE

__all__ = ["sample_image", "digits_batch", "mnist_batch"]


def sample_image(size: int, name: str = "china.jpg") -> tuple[torch.Tensor, int]:
    """A bundled photograph as a ``(3, size, size)`` RGB image in ``[0, 1]``, channels first.

    The photograph is cropped to its top-left square of side ``b * size``, the largest
    multiple of ``size`` that fits, and averaged over blocks of ``b x b`` pixels.

    Parameters
    ----------
    size : int
        The side of the result in pixels.
    name : {"china.jpg", "flower.jpg"}
        A sample image of :func:`sklearn.datasets.load_sample_image`.

    Returns
    -------
    tuple of (torch.Tensor, int)
        The image ``(3, size, size)`` in float64, and the block side ``b``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.5 and Figure 4 (one CIFAR-10 image as the input).

    Examples
    --------
    >>> image, block = sample_image(16)
    >>> tuple(image.shape), block
    ((3, 16, 16), 26)
    """
    from sklearn.datasets import load_sample_image

    size = v.positive_int("size", size)
    name = v.choice("name", name, ("china.jpg", "flower.jpg"))
    raw = torch.tensor(load_sample_image(name), dtype=DTYPE)
    raw = raw.permute(2, 0, 1) / 255                    # RGB channels first, in [0, 1]
    side = min(raw.shape[1:]) // size * size
    if side == 0:
        raise ValueError(f"size must be at most the photograph's side {min(raw.shape[1:])}, "
                         f"got {size}")
    block = side // size
    image = raw[:, :side, :side].reshape(3, size, block, size, block)
    return image.mean((2, 4)), block


def digits_batch(n: int, pixels: int) -> torch.Tensor:
    """A fixed batch: the first ``n`` bundled digits on their ``pixels`` highest-variance pixels.

    The pixels are ranked by their variance over all 1,797 images (ties kept in pixel order);
    the values are the raw intensities 0..16. The batch is returned features first, as the
    ``d x n`` matrix ``X`` of Meterez et al. (2024), whose columns are the samples.

    Parameters
    ----------
    n : int
        The number of images (the batch size), at most 1797.
    pixels : int
        The number of pixels kept (the width ``d``), at most 64.

    Returns
    -------
    torch.Tensor
        Shape ``(pixels, n)``, float64, contiguous.

    References
    ----------
    Meterez et al. (2024), Appendices H and J (a CIFAR10 batch; the book's digits stand in).

    Examples
    --------
    >>> X = digits_batch(33, 32)
    >>> tuple(X.shape), X.is_contiguous()
    ((32, 33), True)
    """
    from sklearn.datasets import load_digits

    return _batch(torch.tensor(load_digits().data, dtype=DTYPE), n, pixels, rank_over_all=True)


def _batch(images: torch.Tensor, n, pixels, *, rank_over_all: bool) -> torch.Tensor:
    """The first ``n`` rows on the ``pixels`` columns of largest variance (over all rows, or
    over the ``n`` kept), as ``d x n``; ``n`` and ``pixels`` checked against the images."""
    n, pixels = v.positive_int("n", n), v.positive_int("pixels", pixels)
    if n > images.shape[0] or pixels > images.shape[1]:
        raise ValueError(f"n must be at most {images.shape[0]} and pixels at most "
                         f"{images.shape[1]}, got n={n}, pixels={pixels}")
    ranked = images if rank_over_all else images[:n]
    keep = torch.argsort(ranked.var(dim=0), descending=True, stable=True)[:pixels]
    return images[:n][:, keep].T.contiguous()


def mnist_batch(n: int, pixels: int) -> torch.Tensor:
    """A fixed batch of real MNIST digits: the first ``n`` stored digits on their ``pixels``
    highest-variance pixels, features first (the ``d x n`` matrix ``X``).

    The digits are the 10,000 of :func:`eit.train.sgd.mnist` in their stored order (checksum
    verified on loading), grey levels in [0, 1]. The pixels are ranked by their variance over
    the batch itself (ties kept in pixel order), unlike :func:`digits_batch`: ranked over all
    10,000 digits, some of the top 100 pixels are blank in every one of the first 101 images,
    and the batch's feature Gram matrix is singular. For widths above the digits' 64 pixels
    (the paper's ``d = 100``).

    Parameters
    ----------
    n : int
        The number of images (the batch size), at most 10,000.
    pixels : int
        The number of pixels kept (the width ``d``), at most 784.

    Returns
    -------
    torch.Tensor
        Shape ``(pixels, n)``, float64, contiguous.

    References
    ----------
    Meterez et al. (2024), Appendices H and J (a CIFAR10 batch; MNIST stands in).

    Examples
    --------
    >>> X = mnist_batch(101, 100)
    >>> tuple(X.shape), float(X.max()) <= 1.0
    ((100, 101), True)
    """
    from ..core.store import load_result
    from .sgd import MNIST

    arrays, _ = load_result(MNIST)
    images = torch.from_numpy(arrays["images"].reshape(len(arrays["images"]), -1)).to(DTYPE)
    return _batch(images / 255, n, pixels, rank_over_all=False)
