"""The worst-case distortion of one random layer over a subspace (Arpit & Bengio 2019,
Theorems 3 and 6).

For an orthonormal basis B of a d-dimensional subspace, A = R B has i.i.d. N(0, 2/m) entries,
so the supremum of | ||ReLU(Ru)|| - 1 | over unit u in the subspace is that of
c -> | ||ReLU(A c)|| - 1 | over the unit sphere of R^d. Three ways to get it from a stack of
matrices ``a`` (n_nets, m, d):

* :func:`masked_extremes`: the masked layer z * (A c) is linear, so its extremes are the
  square roots of the extreme eigenvalues of A^T diag(z) A: exact;
* :func:`relu_exact`: d <= 2, exactly (for d = 2 by a sweep over the angles where a unit
  switches on or off, between which ||ReLU(Ac)||^2 is a trigonometric polynomial);
* :func:`relu_search`: any d, projected gradient ascent and descent of ||ReLU(A c)||^2 on the
  sphere from random starts: a lower bound on the supremum.

References
----------
Arpit & Bengio (2019), Theorems 3 and 6.
"""

from __future__ import annotations

import math

import torch

from ..core import validate as v
from ..core.device import device, randn
from ..core.scaling import rescaled

__all__ = ["masked_extremes", "relu_exact", "relu_search"]


def _stack(a) -> torch.Tensor:
    return v.tensor("a", a, ndim=3)


def _scaled(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a 2^-e, e)`` per matrix: an exact power-of-two rescaling where the squares of a's
    entries would overflow or lose digits (e = 0, a unchanged bit for bit, at ordinary
    scales). The norms ||ReLU(A c)|| and ||z * (A c)|| of the rescaled matrices times 2^e are
    those of ``a``."""
    return rescaled(a, 1)


def _times_2_to(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """``x 2^e`` exactly (to the rounding of the result), ``e`` per matrix (the first axis),
    in two factors so that 2^e itself never overflows."""
    e = e.to(x.dtype).reshape(-1, *([1] * (x.ndim - 1)))
    half = torch.floor(e / 2)
    return torch.ldexp(torch.ldexp(x, half), e - half)


def masked_extremes(a: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """sup over unit c of | ||z * (A c)|| - 1 |, exactly, per matrix: ``(n_nets,)``.

    ``z`` is the mask, ``(n_nets, m)`` of 0/1 (anything else is a ValueError naming it).
    Any finite scale of ``a``: each matrix is rescaled by an exact power of two first.

    Examples
    --------
    >>> a = torch.eye(2, dtype=torch.float64).expand(1, 2, 2)
    >>> masked_extremes(a, torch.ones(1, 2, dtype=torch.float64))
    tensor([0.], dtype=torch.float64)
    """
    a = _stack(a)
    z = v.tensor("z", z, ndim=2)
    if tuple(z.shape) != tuple(a.shape[:2]):
        raise ValueError(f"z must have shape (n_nets, m) = {tuple(a.shape[:2])}, that of the "
                         f"stack a, got {tuple(z.shape)}")
    if not bool(((z == 0) | (z == 1)).all()):
        raise ValueError("z must be a mask: every entry 0 or 1")
    a, e = _scaled(a)
    ev = torch.linalg.eigvalsh(a.transpose(-2, -1) @ (z.unsqueeze(-1) * a))  # ascending
    top, low = _times_2_to(ev[:, -1].sqrt(), e), _times_2_to(ev[:, 0].clamp_min(0).sqrt(), e)
    return torch.maximum(top - 1, 1 - low)


def relu_exact(a: torch.Tensor) -> torch.Tensor:
    """sup over unit c of | ||ReLU(A c)|| - 1 |, exactly, for d <= 2: ``(n_nets,)``.

    d = 1: c = +-1. d = 2: with c = (cos phi, sin phi) and row i of A at radius r_i and angle
    alpha_i, ``f(phi) = ||ReLU(A c)||^2 = sum over active i of r_i^2 cos^2(phi - alpha_i)``,
    unit i being active on the half circle |phi - alpha_i| < pi/2. Between two consecutive
    entry or exit angles the active set is fixed and f = P + Q cos 2phi + R sin 2phi, so its
    extremes over each arc are at the ends or at the stationary points 2phi = atan2(R, Q) mod
    pi inside the arc: a sweep over the 2m sorted events gives the exact extremes.

    Examples
    --------
    >>> a = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    >>> relu_exact(a)   # ||ReLU(c)|| ranges over [0, 1] on the circle
    tensor([1.], dtype=torch.float64)
    """
    a = _stack(a)
    d = a.shape[-1]
    if d > 2:
        raise ValueError(f"relu_exact needs d <= 2: a must have shape (n_nets, m, d) with "
                         f"d <= 2, got d = {d}")
    a, e = _scaled(a)
    if d == 1:
        vals = torch.stack([a[..., 0].clamp_min(0).norm(dim=-1),
                            (-a[..., 0]).clamp_min(0).norm(dim=-1)], -1)
        vals = _times_2_to(vals, e)
        return torch.maximum(vals.max(-1).values - 1, 1 - vals.min(-1).values)
    two_pi = 2 * math.pi
    alpha = torch.atan2(a[..., 1], a[..., 0])                         # (nets, m)
    w = a.square().sum(-1) / 2                                        # r^2 / 2
    weights = torch.stack([w, w * torch.cos(2 * alpha), w * torch.sin(2 * alpha)], -1)
    start = (weights * (torch.cos(alpha) > 0).unsqueeze(-1)).sum(-2)  # active at phi = 0
    pos = torch.cat([torch.remainder(alpha - math.pi / 2, two_pi),
                     torch.remainder(alpha + math.pi / 2, two_pi)], -1)  # enter, leave
    step = torch.cat([weights, -weights], -2)
    order = pos.argsort(-1)
    pos = pos.gather(-1, order)
    step = step.gather(-2, order.unsqueeze(-1).expand(-1, -1, 3))
    state = start.unsqueeze(-2) + step.cumsum(-2)                     # after each event
    lo = torch.cat([torch.zeros_like(pos[..., :1]), pos], -1)         # arcs [lo, hi]
    hi = torch.cat([pos, torch.full_like(pos[..., :1], two_pi)], -1)
    pqr = torch.cat([start.unsqueeze(-2), state], -2)

    def f(phi):
        return pqr[..., 0] + pqr[..., 1] * torch.cos(2 * phi) + pqr[..., 2] * torch.sin(2 * phi)

    beta = torch.atan2(pqr[..., 2], pqr[..., 1])
    cands = [f(lo), f(hi)]
    first = torch.ceil((2 * lo - beta) / math.pi)
    for j in range(4):                                   # stationary points inside the arc
        phi = (beta + (first + j) * math.pi) / 2
        inside = (phi > lo) & (phi < hi)
        cands.append(torch.where(inside, f(phi), f(lo)))
    vals = torch.stack(cands, -1).clamp_min(0).sqrt()    # ||ReLU(Ac)|| at the candidates
    vals = _times_2_to(vals, e)
    return torch.maximum(vals.amax((-2, -1)) - 1, 1 - vals.amin((-2, -1)))


def relu_search(a: torch.Tensor, *, gen: torch.Generator, restarts: int = 8,
                steps: int = 100, lr: float = 0.2) -> torch.Tensor:
    """A lower bound on sup over unit c of | ||ReLU(A c)|| - 1 |: ``(n_nets,)``.

    Projected gradient ascent (for the maximum) and descent (for the minimum) of
    ||ReLU(A c)||^2, gradient 2 A^T ReLU(A c), from ``restarts`` random unit starts.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> a = torch.ones(1, 3, 1, dtype=torch.float64)
    >>> relu_search(a, gen=generator(0), restarts=2, steps=3)
    tensor([1.], dtype=torch.float64)
    """
    a = _stack(a).to(device())                 # the matrices meet the starts drawn by randn
    restarts, steps = v.positive_int("restarts", restarts), v.positive_int("steps", steps)
    lr = v.positive_float("lr", lr)
    v.generator("gen", gen, optional=False)
    a, e = _scaled(a)                          # the search on a 2^-e: a lower bound all the same
    out = []
    for sign in (1.0, -1.0):
        c = randn(a.shape[0], restarts, a.shape[-1], gen=gen)
        c = c / c.norm(dim=-1, keepdim=True)
        for _ in range(steps):
            act = (c @ a.transpose(-2, -1)).clamp_min(0)            # (nets, R, m)
            c = c + sign * lr * 2 * (act @ a)
            c = rescaled(c, 2)[0]              # a step of any scale (a no-op at ordinary ones)
            c = c / c.norm(dim=-1, keepdim=True)
        vals = _times_2_to((c @ a.transpose(-2, -1)).clamp_min(0).norm(dim=-1), e)
        out.append(vals.max(-1).values if sign > 0 else vals.min(-1).values)
    result = torch.maximum(out[0] - 1, 1 - out[1])
    if not bool(torch.isfinite(result).all()):
        raise ValueError(f"lr = {lr!r}: a step of the search overflows float64 (with the "
                         "stack a)")
    return result
