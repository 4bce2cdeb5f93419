"""The linear BN chain of Meterez et al. (2024) layer by layer: gaps, BN Jacobians, hitting times.

The network is ``X_{l+1} = BN(H_l)``, ``H_l = W_l X_l`` (eqs. 3-4) with Haar-orthogonal
``W_l`` and square batches ``X in R^{d x d}`` (n = d). Appendices C, D and I of the paper
bound the *sum of the log-norms of the BN Jacobians* along this chain through the isometry gap
``phi`` (eq. 5). This module measures every quantity those proofs use, for many independent
networks at once (leading dimension ``n_nets``):

* :func:`isometry_gap_det`: ``phi`` of square batches from the determinant;
* :func:`bn_jacobian_lognorm`: ``log ||J_BN(H)||_op = -log min_i ||H_i.||`` (Lemma D.7's
  block structure; the blocks ``J_f(x) = (I - x x^T / ||x||^2) / ||x||`` have norm
  ``1 / ||x||``);
* :func:`run_chain`: ``phi(X_l)`` and ``log ||J_BN(H_l)||`` along the chain;
* :func:`hitting_time`: ``S = min{l : phi(X_l) <= threshold}`` (eq. 96);
* :func:`tail_sums`: ``sum_{l=S+1}^{L} f_l`` for several ``L`` (Lemma D.6);
* :func:`with_isometry_gap`: BN outputs with a prescribed gap (for conditional statements);
* :func:`one_step_decrease`: ``phi(X) - phi(BN(W X))`` for many Haar ``W`` (Lemma C.2);
* :func:`first_layer_grad_op_lognorm`: ``log ||dL/dW_0||_op`` of the linear read-out loss
  ``L = <R, X_L>_F`` (``||R||_F = 1``), in log space (Theorem I.1).

References
----------
A. Meterez, A. Joudaki, F. Orabona, A. Immer, G. Raetsch, H. Daneshmand, "Towards training
without depth limits: batch normalization without gradient explosion", ICLR 2024,
Appendices C, D and I.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..sample.laws import gaussian, haar_orthogonal

__all__ = ["Chain", "hartley", "isometry_gap_det", "bn_rows", "bn_jacobian_lognorm", "run_chain",
           "hitting_time", "square_weights", "tail_sums", "with_isometry_gap", "one_step_decrease",
           "first_layer_grad_op_lognorm"]


def _square(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} must be a batch of square matrices (..., d, d), got shape "
                         f"{tuple(x.shape)}")
    return v.tensor(name, x, ndim=x.ndim)


def isometry_gap_det(x: torch.Tensor) -> torch.Tensor:
    """phi(X) = log(tr(X^T X)/d) - (2/d) log|det X| for square batches (..., d, d).

    The determinant form of eq. (5) with n = d; +inf for a singular X (``det X = 0``). Near
    isometry it resolves gaps down to about 1e-15.

    Examples
    --------
    >>> import torch
    >>> float(isometry_gap_det(torch.eye(3, dtype=torch.float64)))
    0.0
    """
    x = _square("x", x)
    d = x.shape[-1]
    _, logabs = torch.linalg.slogdet(x)
    tr = x.square().sum(dim=(-2, -1))
    return torch.log(tr / d) - 2.0 * logabs / d


def bn_rows(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """BN of eq. (4) and the row norms it divides by: ``(H / ||H_i.||, ||H_i.||)``."""
    norms = h.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("h has a zero row: BN(h) is undefined")
    return h / norms, norms.squeeze(-1)


def bn_jacobian_lognorm(h: torch.Tensor) -> torch.Tensor:
    """log ||J_BN(H)||_op = -log min_i ||H_i.|| for each matrix of a batch (..., d, n).

    BN acts on every row separately, so its Jacobian is block diagonal with the blocks
    ``J_f(H_i.) = (I - u u^T) / ||H_i.||`` (``u`` the unit row), of norm ``1 / ||H_i.||``.
    """
    if not isinstance(h, torch.Tensor) or h.ndim < 2:
        raise TypeError("h must be a torch.Tensor of matrices (..., d, n)")
    _, norms = bn_rows(v.tensor("h", h, ndim=h.ndim))
    return -torch.log(norms.amin(dim=-1))


@dataclass(frozen=True)
class Chain:
    """One run of the chain for ``n_nets`` networks.

    Attributes
    ----------
    gaps : torch.Tensor
        ``phi(X_l)`` for l = 0..depth, shape (n_nets, depth + 1).
    jac : torch.Tensor
        ``log ||J_BN(H_l)||_op`` for l = 0..depth-1 (the Jacobian of X_{l+1} = BN(H_l)),
        shape (n_nets, depth).
    """

    gaps: torch.Tensor
    jac: torch.Tensor

    @property
    def depth(self) -> int:
        return self.jac.shape[1]


def _inputs(x0, n_nets: int) -> torch.Tensor:
    return v.per_network("x0", x0, n_nets, square=True).to(device=device(), dtype=DTYPE)


def square_weights(kind: str, n_nets: int, d: int, *, gen: torch.Generator) -> torch.Tensor:
    """``n_nets`` square weight matrices ``(d, d)`` of the BN chains: Haar or Gaussian.

    Parameters
    ----------
    kind : str
        ``'orthogonal'`` (Haar-orthogonal, the paper's choice) or ``'gaussian'`` (i.i.d.
        N(0, 1/d) entries, the variance that preserves the expected squared norm).
    n_nets : int
        The number of networks.
    d : int
        The width.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    torch.Tensor
        ``(n_nets, d, d)``.

    References
    ----------
    Meterez et al. (2024), eq. (3) and Appendices H and J (the Gaussian variant).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> square_weights("gaussian", 2, 3, gen=generator(0)).shape
    torch.Size([2, 3, 3])
    """
    if kind == "orthogonal":
        return haar_orthogonal(n_nets, d, d, gen=gen)
    if kind == "gaussian":
        return gaussian(n_nets, d, d, 1.0 / d, gen=gen)
    raise ValueError(f"weights must be 'orthogonal' or 'gaussian', got {kind!r}")


def run_chain(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
              weights: str = "orthogonal") -> Chain:
    """phi(X_l) and log ||J_BN(H_l)|| along X_{l+1} = BN(W_l X_l) for ``n_nets`` networks.

    ``x0`` is one square input batch (d, d) or one per network (n_nets, d, d); it is used as
    given (it need not be a BN output).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.core.device import randn
    >>> c = run_chain(randn(3, 3, gen=generator(0)), 5, n_nets=2, gen=generator(1))
    >>> tuple(c.gaps.shape), tuple(c.jac.shape)
    ((2, 6), (2, 5))
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    d = x.shape[-1]
    gaps = torch.empty(n_nets, depth + 1, dtype=DTYPE, device=x.device)
    jac = torch.empty(n_nets, depth, dtype=DTYPE, device=x.device)
    gaps[:, 0] = isometry_gap_det(x)
    for ell in range(depth):
        h = square_weights(weights, n_nets, d, gen=gen) @ x
        x, norms = bn_rows(h)
        jac[:, ell] = -torch.log(norms.amin(dim=-1))
        gaps[:, ell + 1] = isometry_gap_det(x)
    return Chain(gaps, jac)


def hitting_time(gaps: torch.Tensor, threshold: float) -> torch.Tensor:
    """S = min{l : phi(X_l) <= threshold} per network (eq. 96), as an integer tensor.

    Raises if some network never reaches the threshold within the recorded layers (the chain
    was too short to observe S).
    """
    if not isinstance(gaps, torch.Tensor) or gaps.ndim != 2:
        raise TypeError("gaps must be a tensor (n_nets, depth + 1)")
    threshold = v.positive_float("threshold", threshold)
    below = gaps <= threshold
    if not bool(below.any(dim=1).all()):
        raise ValueError("some networks never reach the threshold: run a deeper chain")
    return below.to(torch.int64).argmax(dim=1)


def tail_sums(values: torch.Tensor, start: torch.Tensor, ends: Sequence[int]) -> torch.Tensor:
    """``sum_{l=start+1}^{L} values[:, l]`` per network for each L in ``ends``.

    ``values`` has shape (n_nets, m) indexed by the layer l = 0..m-1; ``start`` is an
    integer tensor (n_nets,) (for example :func:`hitting_time`). An empty sum is 0.
    Returns (n_nets, len(ends)).
    """
    if not isinstance(values, torch.Tensor) or values.ndim != 2:
        raise TypeError("values must be a tensor (n_nets, layers)")
    ends = v.widths("ends", list(ends))
    if max(ends) >= values.shape[1]:
        raise ValueError(f"ends must be < {values.shape[1]} (the recorded layers), got {ends}")
    ell = torch.arange(values.shape[1], device=values.device)
    after = ell.unsqueeze(0) > start.unsqueeze(1)
    cols = []
    for end in ends:
        mask = after & (ell.unsqueeze(0) <= end)
        cols.append(torch.where(mask, values, torch.zeros_like(values)).sum(dim=1))
    return torch.stack(cols, dim=1)


def _bn_of_spectrum(u: torch.Tensor, s_log: torch.Tensor, vt: torch.Tensor, t: torch.Tensor
                    ) -> torch.Tensor:
    s = torch.exp(t.unsqueeze(-1) * s_log)
    return bn_rows((u * s.unsqueeze(-2)) @ vt)[0]


def hartley(d: int) -> torch.Tensor:
    """The discrete Hartley matrix ``cas(2 pi j k / d) / sqrt(d)`` (symmetric, orthogonal).

    Examples
    --------
    >>> h = hartley(5)
    >>> bool(torch.allclose(h @ h, torch.eye(5, dtype=h.dtype)))
    True
    """
    d = v.positive_int("d", d)
    jk = torch.outer(torch.arange(d, dtype=DTYPE), torch.arange(d, dtype=DTYPE))
    angle = 2 * torch.pi * jk / d
    return ((torch.cos(angle) + torch.sin(angle)) / d**0.5).to(device())


def with_isometry_gap(d: int, targets: Sequence[float], *, gen: torch.Generator | None = None,
                      tol: float = 1e-12) -> torch.Tensor:
    """BN outputs X = BN(U diag(exp(t z)) V^T) (rows of unit norm) with phi(X) = target.

    With ``gen=None`` the batch is canonical (no randomness): ``U`` is the Hartley matrix
    (:func:`hartley`), ``V = I`` and ``z`` is evenly spaced on [-1, 1], so that every target
    gets the same deterministic family of batches. With a generator, ``U, V`` are Haar and
    ``z`` has i.i.d. uniform entries on [-1, 1] (one draw per target). The scale ``t >= 0`` is
    found by bisection, so that ``phi(X)`` equals the target to ``tol`` relative.
    Returns (len(targets), d, d).

    Examples
    --------
    >>> x = with_isometry_gap(4, [0.1, 1.0])
    >>> [round(float(g), 9) for g in isometry_gap_det(x)]
    [0.1, 1.0]
    """
    d = v.positive_int("d", d)
    if d < 2:
        raise ValueError("d must be >= 2 for a non-zero isometry gap")
    targets = [v.positive_float(f"targets[{i}]", t) for i, t in enumerate(targets)]
    k = len(targets)
    if k == 0:
        raise ValueError("targets must not be empty")
    if gen is None:
        u = hartley(d).expand(k, d, d)
        vt = torch.eye(d, dtype=DTYPE, device=u.device).expand(k, d, d)
        z = torch.linspace(-1.0, 1.0, d, dtype=DTYPE, device=u.device).expand(k, d)
    else:
        u = haar_orthogonal(k, d, d, gen=gen)
        vt = haar_orthogonal(k, d, d, gen=gen)
        z = 2.0 * torch.rand(k, d, generator=gen, device=gen.device, dtype=DTYPE).to(device()) - 1
        z = z - z.mean(dim=1, keepdim=True)
    goal = torch.tensor(targets, dtype=DTYPE, device=u.device)
    lo = torch.zeros(k, dtype=DTYPE, device=u.device)
    hi = torch.ones(k, dtype=DTYPE, device=u.device)
    for _ in range(200):  # grow the bracket until phi(hi) >= goal
        short = isometry_gap_det(_bn_of_spectrum(u, z, vt, hi)) < goal
        if not bool(short.any()):
            break
        hi = torch.where(short, 2 * hi, hi)
    else:  # pragma: no cover - the gap grows without bound with t
        raise RuntimeError("could not bracket the target gaps")
    for _ in range(200):
        mid = (lo + hi) / 2
        above = isometry_gap_det(_bn_of_spectrum(u, z, vt, mid)) > goal
        lo, hi = torch.where(above, lo, mid), torch.where(above, mid, hi)
        if bool(((hi - lo) <= tol * hi).all()):
            break
    x = _bn_of_spectrum(u, z, vt, (lo + hi) / 2)
    got = isometry_gap_det(x)
    if not bool(((got - goal).abs() <= 1e3 * tol * goal + 1e-15).all()):
        raise RuntimeError("bisection did not reach the target gaps")
    return x


def one_step_decrease(x: torch.Tensor, n_draws: int, *, gen: torch.Generator) -> torch.Tensor:
    """phi(X) - phi(BN(W X)) for ``n_draws`` Haar draws of W per matrix of ``x`` (k, d, d).

    Returns (k, n_draws). By Lemma B.1 every entry is >= 0 up to rounding.
    """
    x = _square("x", x)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (k, d, d), got {tuple(x.shape)}")
    n_draws = v.positive_int("n_draws", n_draws)
    k, d = x.shape[0], x.shape[-1]
    w = haar_orthogonal(k * n_draws, d, d, gen=gen).view(k, n_draws, d, d)
    after = isometry_gap_det(bn_rows(w @ x.unsqueeze(1))[0])
    return isometry_gap_det(x).unsqueeze(1) - after


def first_layer_grad_op_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                                gen: torch.Generator) -> torch.Tensor:
    """log ||dL/dW_0||_op for the chain truncated at each depth L in ``depths``.

    The loss is the linear read-out ``L = <R, X_L>_F`` with ``R`` Gaussian normalized to
    ``||R||_F = 1`` (1-Lipschitz), drawn once per network; depth L uses the first L layers of
    one deep network. The backward pass renormalizes the cotangent at every layer and adds its
    log-norm, so nothing overflows. Returns (n_nets, len(depths)).
    """
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    d = x.shape[-1]
    v.memory("n_nets x max(depths) x d x d (stored layers)",
             2 * n_nets * max(ds) * d * d * 8)
    ws, xs, norms = [], [x], []
    for _ in range(max(ds)):
        w = haar_orthogonal(n_nets, d, d, gen=gen)
        y, r = bn_rows(w @ xs[-1])
        ws.append(w)
        xs.append(y)
        norms.append(r)
    readout = torch.randn(n_nets, d, d, generator=gen, device=gen.device, dtype=DTYPE)
    readout = readout.to(x.device)
    readout = readout / readout.flatten(1).norm(dim=1).view(-1, 1, 1)
    out = torch.empty(n_nets, len(ds), dtype=DTYPE, device=x.device)
    for col, depth in enumerate(ds):
        g, log_scale = readout, torch.zeros(n_nets, dtype=DTYPE, device=x.device)
        for ell in range(depth - 1, -1, -1):
            y = xs[ell + 1]
            gh = (g - y * (g * y).sum(dim=-1, keepdim=True)) / norms[ell].unsqueeze(-1)
            if ell == 0:
                grad_w = gh @ xs[0].transpose(-2, -1)
                out[:, col] = log_scale + torch.log(torch.linalg.matrix_norm(grad_w, ord=2))
                break
            g = ws[ell].transpose(-2, -1) @ gh
            scale = g.flatten(1).norm(dim=1)
            log_scale = log_scale + torch.log(scale)
            g = g / scale.view(-1, 1, 1)
    return out
