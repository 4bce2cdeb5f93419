"""One weight-normalized layer applied to fixed inputs (Arpit, Campos & Bengio 2019).

The squared-norm ratios of Theorems 1 and 5 (forward), Theorems 2 and 6 (backward) and
footnote 3 (convolutional layers), for many independent layers at once. Every function
returns the ratios at **unit gain**: a weight-normalized layer is ``g * W_hat`` and ReLU is
positively homogeneous, so the ratio at gain ``g`` is exactly ``g**2`` times the returned one.
One set of draws therefore serves every gain (the proposed one, ``g = 1``, ...), and the
ReLU and linear ratios come from the same draws.

Rows are those of :func:`eit.models.wn_init.directions`: ``'sphere'`` (the normalized rows
of any isotropic law) or ``'orthogonal'`` (the rows of a Haar matrix, normalized).

References
----------
Arpit, Campos & Bengio (2019), Theorems 1, 2, 5, 6, footnote 3 and the remark after
Theorem 2 ("in the absence of ReLU, this factor should be 1").
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from ..core import validate as v
from ..core.device import DTYPE, device, rand
from ..core.scaling import rescaled
from ..sample.laws import DIRECTIONS, Direction, directions

__all__ = ["Padding", "backward_ratios", "conv_forward_ratios", "forward_ratios",
           "patch_coverage"]

Padding = Literal["circular", "zeros"]


def _direction(direction) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return direction


def _blocks(n_nets: int, per_net: int, chunk: int) -> list[tuple[int, int]]:
    """(start, size) blocks of networks holding at most ``chunk`` numbers each."""
    step = max(1, min(n_nets, chunk // max(1, per_net)))
    return [(s, min(step, n_nets - s)) for s in range(0, n_nets, step)]


def _rows(u) -> tuple[torch.Tensor, bool, torch.Tensor]:
    """``u`` as a batch of rows on the device, whether it was one vector, its squared norms.

    The ratios are scale invariant: rows of any finite scale are rescaled exactly by powers of
    two (rows of ordinary scale are left as they are).
    """
    u = v.tensor("u", u, ndim=(1, 2)).to(device=device(), dtype=DTYPE)
    single = u.ndim == 1
    u, _ = rescaled(u.reshape(-1, u.shape[-1]), 1)
    sq = u.square().sum(-1)
    if (sq == 0).any():
        raise ValueError("u must have no zero row (the ratio is undefined at 0)")
    return u, single, sq


def forward_ratios(u: torch.Tensor, m: int, direction: Direction, *, n_nets: int,
                   gen: torch.Generator, chunk: int = 2**22
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``||ReLU(W_hat u)||^2 / ||u||^2`` and ``||W_hat u||^2 / ||u||^2`` at unit gain.

    Parameters
    ----------
    u : torch.Tensor
        One input ``(n,)`` or several ``(N, n)``, shared by all layers; no zero rows.
    m : int
        The fan-out: ``W_hat`` has shape ``(m, n)``.
    direction : {'sphere', 'orthogonal'}
        The law of the unit rows.
    n_nets : int
        The number of independent layers.
    gen : torch.Generator
        The random generator (:func:`eit.core.seeds.generator`).
    chunk : int
        At most this many weights are held at once.

    Returns
    -------
    relu, linear : torch.Tensor
        Shape ``(n_nets,)`` for one input, ``(n_nets, N)`` for several. Multiply by ``g**2``
        for the ratio at gain ``g`` (Theorem 1: ``g**2 = 2 n / m`` for ``relu``; the remark
        after Theorem 2: ``g**2 = n / m`` for ``linear``).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> relu, lin = forward_ratios(torch.ones(4, dtype=torch.float64), 4, "orthogonal",
    ...                            n_nets=3, gen=generator(0))
    >>> [round(float(x), 12) for x in lin]   # a square orthogonal layer is an isometry
    [1.0, 1.0, 1.0]
    """
    u, single, sq = _rows(u)
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    direction = _direction(direction)
    chunk = v.positive_int("chunk", chunk)
    n = u.shape[-1]
    relu = torch.empty(n_nets, u.shape[0], dtype=DTYPE, device=device())
    linear = torch.empty_like(relu)
    for start, k in _blocks(n_nets, m * n, chunk):
        a = directions(k, m, n, direction, gen=gen) @ u.T          # (k, m, N)
        relu[start:start + k] = a.clamp_min(0).square().sum(-2) / sq
        linear[start:start + k] = a.square().sum(-2) / sq
    return (relu[:, 0], linear[:, 0]) if single else (relu, linear)


def backward_ratios(u: torch.Tensor, n: int, direction: Direction, *, n_nets: int,
                    gen: torch.Generator, chunk: int = 2**22
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``||z * (W_hat^T u)||^2 / ||u||^2`` and ``||W_hat^T u||^2 / ||u||^2`` at unit gain.

    ``u`` has ``m`` entries (the fan-out of ``W_hat``, shape ``(m, n)``), or is a batch
    ``(K, m)`` of such vectors sharing each layer; ``z`` has i.i.d. Bernoulli(1/2) entries
    independent of ``W_hat`` (Theorems 2 and 6), a fresh ``z`` for every vector. Both ratios
    come from the same draws of ``W_hat``; multiply the first by ``g**2 = 2`` (Theorem 2), the
    second by ``g**2 = 1`` (no ReLU).

    Returns
    -------
    masked, unmasked : torch.Tensor
        Shape ``(n_nets,)`` for one vector, ``(n_nets, K)`` for a batch.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> z, w = backward_ratios(torch.ones(2, dtype=torch.float64), 5, "sphere", n_nets=4,
    ...                        gen=generator(0))
    >>> bool((z <= w + 1e-12).all()), tuple(z.shape)
    (True, (4,))
    """
    u, single, sq = _rows(u)
    n, n_nets = v.positive_int("n", n), v.positive_int("n_nets", n_nets)
    direction = _direction(direction)
    chunk = v.positive_int("chunk", chunk)
    m, kk = u.shape[-1], u.shape[0]
    masked = torch.empty(n_nets, kk, dtype=DTYPE, device=device())
    unmasked = torch.empty_like(masked)
    for start, k in _blocks(n_nets, m * n, chunk):
        w = u @ directions(k, m, n, direction, gen=gen)                 # (k, K, n)
        z = rand(k, kk, n, gen=gen) < 0.5
        masked[start:start + k] = (w * z).square().sum(-1) / sq
        unmasked[start:start + k] = w.square().sum(-1) / sq
    return (masked[:, 0], unmasked[:, 0]) if single else (masked, unmasked)


def _padding(padding) -> str:
    if padding not in ("circular", "zeros"):
        raise ValueError(f"padding must be 'circular' or 'zeros', got {padding!r}")
    return padding


def _patches(h: torch.Tensor, k: int, padding: str) -> torch.Tensor:
    """The k x k patches of ``h`` (c, H, W) at every position, stride 1, 'same' size:
    shape ``(c k^2, H W)``."""
    p = k // 2
    x = h.unsqueeze(0)
    if padding == "circular":
        x = F.pad(x, (p, p, p, p), mode="circular")
        return F.unfold(x, k)[0]
    return F.unfold(x, k, padding=p)[0]


def _image(name: str, h, k) -> tuple[torch.Tensor, int]:
    h = v.tensor(name, h, ndim=3).to(device=device(), dtype=DTYPE)
    h = rescaled(h[None], 1)[0][0]          # the ratios are scale invariant: any finite scale
    k = v.positive_int("k", k)
    if k % 2 == 0:
        raise ValueError(f"k must be odd ('same' padding), got {k}")
    if min(h.shape[1:]) < k:
        raise ValueError(f"{name} must be at least k = {k} pixels wide, got {tuple(h.shape)}")
    if h.square().sum() == 0:
        raise ValueError(f"{name} must be non-zero (the ratio is undefined at 0)")
    return h, k


def patch_coverage(h: torch.Tensor, k: int, padding: Padding) -> float:
    """``sum_positions ||patch||^2 / (k^2 ||h||^2)`` for a stride-1 'same' convolution.

    The forward ratio of a weight-normalized convolution with the gain of footnote 3 is this
    number in expectation (for any row law of the filters): 1 with circular padding, where
    every pixel lies in ``k^2`` patches, and below 1 with zero padding, which loses the
    patches hanging over the border.

    Examples
    --------
    >>> h = torch.ones(1, 4, 4, dtype=torch.float64)
    >>> patch_coverage(h, 3, "circular"), round(patch_coverage(h, 3, "zeros"), 6)
    (1.0, 0.694444)
    """
    h, k = _image("h", h, k)
    patches = _patches(h, k, _padding(padding))
    return float(patches.square().sum() / (k * k * h.square().sum()))


def conv_forward_ratios(h: torch.Tensor, c_out: int, k: int, direction: Direction, *,
                        n_nets: int, gen: torch.Generator, padding: Padding = "circular",
                        chunk: int = 2**22) -> torch.Tensor:
    """``||ReLU(conv(h))||^2 / ||h||^2`` for ``n_nets`` weight-normalized conv layers.

    Each of the ``c_out`` filters is a unit vector of ``R^{c_in k^2}`` (one row of the
    unrolled weight matrix, as weight normalization normalizes it), with the given
    ``direction``; the convolution has stride 1 and 'same' size. Unit gain: footnote 3's
    gain is ``g**2 = 2 n_{l-1} / n_l = 2 k^2 c_in / (k^2 c_out)``.

    Parameters
    ----------
    h : torch.Tensor
        The input image ``(c_in, H, W)``, shared by all layers.
    c_out, k : int
        Output channels and (odd) kernel size.

    Returns
    -------
    torch.Tensor
        Shape ``(n_nets,)``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> r = conv_forward_ratios(torch.ones(2, 5, 5, dtype=torch.float64), 3, 3, "sphere",
    ...                         n_nets=4, gen=generator(0))
    >>> tuple(r.shape)
    (4,)
    """
    h, k = _image("h", h, k)
    c_out, n_nets = v.positive_int("c_out", c_out), v.positive_int("n_nets", n_nets)
    direction = _direction(direction)
    chunk = v.positive_int("chunk", chunk)
    patches = _patches(h, k, _padding(padding))               # (c_in k^2, HW)
    sq = h.square().sum()
    out = torch.empty(n_nets, dtype=DTYPE, device=device())
    fan = patches.shape[0]
    for start, b in _blocks(n_nets, c_out * max(fan, patches.shape[1]), chunk):
        a = directions(b, c_out, fan, direction, gen=gen) @ patches   # (b, c_out, HW)
        out[start:start + b] = a.clamp_min(0).square().sum((-2, -1)) / sq
    return out
