"""Tests of eit.train.sgd: the digits split and the SGD loop with divergence detection."""

import math

import pytest
import torch

from eit.core.device import DTYPE
from eit.train.sgd import Digits, Run, accuracy, digits, sgd


def _linear(data: Digits, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    w = (0.01 * torch.randn(64, 10, generator=gen, dtype=DTYPE)).requires_grad_(True)
    b = torch.zeros(10, dtype=DTYPE, requires_grad=True)
    return (lambda x: x.reshape(len(x), -1) @ w + b), [w, b]


def test_digits_split_is_seeded_disjoint_and_scaled():
    a, b = digits(seed=1), digits(seed=1)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert len(a.x_train) + len(a.x_test) == 1797
    assert len(a.x_test) == round(0.25 * 1797)
    assert a.x_train.min() >= 0 and a.x_train.max() <= 1 and a.x_train.dtype == DTYPE
    assert not torch.equal(digits(seed=2).y_train, a.y_train)
    assert digits(seed=1, images=True).x_train.shape[1:] == (1, 8, 8)


def test_sgd_learns_a_linear_classifier():
    data = digits(seed=0)
    model, params = _linear(data)
    before = accuracy(model, data.x_test, data.y_test)
    run = sgd(model, params, data, lr=0.5, epochs=5, batch_size=64,
              gen=torch.Generator().manual_seed(0))
    assert isinstance(run, Run) and not run.diverged and run.diverged_at_step is None
    assert len(run.losses) == 5 and run.losses[-1] < run.losses[0] < math.log(10) + 0.1
    assert run.test_accuracy > 0.85 > before


def test_sgd_reports_divergence_and_zero_accuracy():
    data = digits(seed=0)
    model, params = _linear(data)
    run = sgd(model, params, data, lr=1e4, epochs=3, batch_size=64,
              gen=torch.Generator().manual_seed(0))
    assert run.diverged and run.diverged_at_step is not None
    assert run.train_accuracy == run.test_accuracy == 0.0


def test_warmup_is_reproducible_and_changes_the_trajectory():
    data = digits(seed=0)
    runs = []
    for warmup in (0, 0, 20):
        model, params = _linear(data)
        runs.append(sgd(model, params, data, lr=0.5, epochs=1, batch_size=64, warmup_steps=warmup,
                        gen=torch.Generator().manual_seed(3)))
    assert runs[0] == runs[1] and runs[0].losses != runs[2].losses


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"lr": 0.0}, "lr"), ({"lr": -1.0}, "lr"), ({"epochs": 0}, "epochs"),
    ({"batch_size": 0}, "batch_size"), ({"momentum": 1.0}, "momentum"),
    ({"warmup_steps": -1}, "warmup_steps"), ({"max_loss": float("inf")}, "max_loss"),
])
def test_sgd_rejects_bad_arguments(kwargs, name):
    data = digits(seed=0)
    model, params = _linear(data)
    args = {"lr": 0.1, "epochs": 1, "batch_size": 32} | kwargs
    with pytest.raises(ValueError, match=name):
        sgd(model, params, data, gen=torch.Generator(), **args)


def test_bad_data_and_params_are_named():
    data = digits(seed=0)
    model, params = _linear(data)
    with pytest.raises(TypeError, match="data"):
        sgd(model, params, (1, 2), lr=0.1, epochs=1, batch_size=8, gen=torch.Generator())
    with pytest.raises(ValueError, match=r"params\[0\]"):
        sgd(model, [torch.zeros(3)], data, lr=0.1, epochs=1, batch_size=8, gen=torch.Generator())
    with pytest.raises(ValueError, match="params"):
        sgd(model, [], data, lr=0.1, epochs=1, batch_size=8, gen=torch.Generator())
    with pytest.raises(ValueError, match="seed"):
        digits(seed=-1)
    with pytest.raises(ValueError, match="test_fraction"):
        digits(seed=0, test_fraction=1.0)
