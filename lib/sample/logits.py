"""Random logits and targets on which to test the gradient of a classification loss.

Lemma D.2 of Meterez et al. (2024) bounds the gradient of cross-entropy and MSE of the softmax
output with respect to the logits. :func:`random_logits` draws logits of every scale (so that
the softmax ranges from uniform to saturated) with one-hot and soft targets.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..core.device import DTYPE

__all__ = ["random_logits"]


def random_logits(n: int, n_classes: int, *,
                  gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``2 n`` random logits ``z = s xi`` with ``n`` one-hot and ``n`` soft targets.

    ``xi`` is standard Gaussian and the scale ``s`` log-uniform on ``[1e-2, 1e2]`` (one per
    row). The first ``n`` targets are one-hot at a uniform random class, the last ``n`` uniform
    on the simplex (normalized exponentials). All draws come from one uniform array
    ``(2 n, n_classes + 2)`` and one Gaussian array ``(2 n, n_classes)`` on the generator's
    device, in that order.

    Parameters
    ----------
    n : int
        Rows of each kind of target.
    n_classes : int
        Number of classes ``C`` (>= 2).
    gen : torch.Generator
        The generator.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        Logits and targets, both float64 of shape ``(2 n, C)``, on the CPU.

    References
    ----------
    Meterez et al. (2024), Remark 2 and Lemma D.2, eqs. (150)-(159).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> z, y = random_logits(3, 4, gen=generator(0))
    >>> z.shape, bool(torch.allclose(y.sum(dim=1), torch.ones(6, dtype=torch.float64)))
    (torch.Size([6, 4]), True)
    """
    n = v.positive_int("n", n)
    n_classes = v.positive_int("n_classes", n_classes)
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2, got {n_classes}")
    v.generator("gen", gen, optional=False)
    kw = dict(generator=gen, dtype=DTYPE, device=gen.device)
    u = torch.rand(2 * n, n_classes + 2, **kw)
    xi = torch.randn(2 * n, n_classes, **kw)
    z = (10 ** (4 * u[:, :1] - 2) * xi).cpu()
    y = -torch.log(u[:, 2:].cpu())                 # soft targets: uniform on the simplex
    y = y / y.sum(dim=1, keepdim=True)
    hot = (u[:n, 1] * n_classes).long().cpu()
    y[:n] = torch.nn.functional.one_hot(hot, n_classes).to(DTYPE)
    return z, y
