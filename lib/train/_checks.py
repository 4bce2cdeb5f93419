"""Argument checks shared by the training modules (samples and labels, parameters)."""

from __future__ import annotations

import torch

from ..core import validate as v


def samples(x, y, *, finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Check a batch: ``x`` a floating-point tensor ``(N, ...)`` (finite where ``finite``),
    ``y`` ``N`` integer labels >= 0. Every error names ``x`` or ``y``.

    The checks of values (labels >= 0, finite ``x``) read one bool each on the host.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor of samples, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if x.ndim < 2:
        raise ValueError(f"x must have a sample axis and a feature axis (N, ...), got shape "
                         f"{tuple(x.shape)}")
    if not isinstance(y, torch.Tensor) or y.is_floating_point() or y.is_complex() \
            or y.dtype == torch.bool:
        raise TypeError(f"y must be a tensor of integer labels, got "
                        f"{getattr(y, 'dtype', type(y).__name__)}")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"x and y must hold the same number of samples (y one label per "
                         f"sample), got x of shape {tuple(x.shape)} and y of shape "
                         f"{tuple(y.shape)}")
    y = v.labels("y", y)
    if finite and not bool(torch.isfinite(x).all()):
        raise ValueError("x contains inf or NaN")
    return x, y


def classes(y: torch.Tensor, logits: torch.Tensor) -> None:
    """Refuse a label at or above the number of classes ``logits.shape[-1]`` (naming ``y``)."""
    n = logits.shape[-1]
    if bool((y >= n).any()):
        raise ValueError(f"y must hold labels in [0, {n}) (the model has {n} classes), got "
                         f"{int(y.max())}")


def params(name: str, value) -> list[torch.Tensor]:
    """A non-empty sequence of tensors that require gradients (naming ``name``)."""
    if isinstance(value, (str, bytes, torch.Tensor)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of tensors requiring grad, got "
                        f"{type(value).__name__}")
    value = list(value)
    if not value:
        raise ValueError(f"{name} must be a non-empty sequence of tensors requiring grad")
    for i, p in enumerate(value):
        if not isinstance(p, torch.Tensor) or not p.requires_grad:
            raise ValueError(f"{name}[{i}] must be a tensor requiring grad, got "
                             f"{type(p).__name__}")
    return value


def scalar_loss(name: str, loss, *, finite: bool) -> torch.Tensor:
    """A scalar tensor with a graph (finite where ``finite``: one bool read on the host)."""
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise ValueError(f"{name} must be a scalar tensor, got "
                         f"{getattr(loss, 'shape', type(loss).__name__)}")
    if not loss.requires_grad:
        raise ValueError(f"{name} must have a graph (computed from parameters that require "
                         "grad)")
    if finite and not bool(torch.isfinite(loss)):
        raise ValueError(f"{name} is not finite ({float(loss.detach())}): its Hessian is "
                         "undefined")
    return loss
