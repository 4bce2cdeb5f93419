"""Bundled images as inputs (eit.train.images), checked against the chapters' former code."""

from __future__ import annotations

import pytest
import torch
from sklearn.datasets import load_digits, load_sample_image

from eit.train.images import digits_batch, mnist_batch, sample_image


@pytest.mark.parametrize("size", [16, 32])
def test_sample_image_is_the_convolutional_chapters_image(size):
    raw = torch.tensor(load_sample_image("china.jpg"), dtype=torch.float64)
    raw = raw.permute(2, 0, 1) / 255
    side = min(raw.shape[1:]) // size * size
    block = side // size
    old = raw[:, :side, :side].reshape(3, size, block, size, block).mean((2, 4))
    image, b = sample_image(size, "china.jpg")
    assert b == block and torch.equal(image, old)
    assert image.dtype == torch.float64 and 0 <= image.min() and image.max() <= 1


def test_digits_batch_is_the_meterez_chapters_batch():
    digits = torch.tensor(load_digits().data, dtype=torch.float64)
    pixels = torch.argsort(digits.var(dim=0), descending=True, stable=True)[:32]
    old = digits[:33][:, pixels].T.contiguous()
    assert torch.equal(digits_batch(33, 32), old)


def test_digits_batch_ranks_pixels_by_variance():
    X = digits_batch(1797, 64)
    var = torch.tensor(load_digits().data, dtype=torch.float64).var(dim=0)
    assert torch.allclose(X.var(dim=1), var.sort(descending=True, stable=True).values,
                          rtol=1e-12, atol=0)


def test_bad_input():
    with pytest.raises(ValueError, match="size"):
        sample_image(0)
    with pytest.raises(ValueError, match="size"):
        sample_image(10_000)
    with pytest.raises(TypeError, match="name"):
        sample_image(16, 3)
    with pytest.raises(ValueError, match="pixels"):
        digits_batch(10, 65)
    with pytest.raises(ValueError, match="n must"):
        digits_batch(0, 5)


def test_mnist_batch_is_the_first_digits_on_their_most_variable_pixels():
    from eit.core.store import load_result
    from eit.train.sgd import MNIST

    X = mnist_batch(101, 100)
    assert X.shape == (100, 101) and X.dtype == torch.float64 and X.is_contiguous()
    var = X.var(dim=1)
    assert bool((var[:-1] >= var[1:]).all())           # ranked by variance over the batch
    images = torch.from_numpy(load_result(MNIST)[0]["images"][:101].reshape(101, -1))
    rest = torch.ones(784, dtype=torch.bool)
    for row in X:                                       # every kept row is a pixel column
        match = (images.double() / 255 == row[:, None]).all(dim=0) & rest
        assert match.any()
        rest[int(match.nonzero()[0])] = False
    assert float((images.double() / 255)[:, rest].var(dim=0).max()) <= float(var.min())
    centred = X - X.mean(dim=1, keepdim=True)           # the paper's d = 100 is non-singular
    assert int(torch.linalg.matrix_rank(centred)) == 100
    with pytest.raises(ValueError, match="pixels"):
        mnist_batch(10, 785)
    with pytest.raises(ValueError, match="n must be"):
        mnist_batch(10001, 5)
