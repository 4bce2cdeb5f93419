"""The linear BN chain of Meterez et al. (2024) layer by layer: gaps, BN Jacobians, hitting times.

The network is ``X_{l+1} = BN(H_l)``, ``H_l = W_l X_l`` (eqs. 3-4) with Haar-orthogonal
``W_l`` and square batches ``X in R^{d x d}`` (n = d). Appendices C, D and I of the paper
bound the *sum of the log-norms of the BN Jacobians* along this chain through the isometry gap
``phi`` (eq. 5). This module measures every quantity those proofs use, for many independent
networks at once; its per-layer tables have the axis order of the engines' traces
(:class:`~eit.sample.traces.Trace`), the layer first and then the networks, e.g.
``(depth + 1, n_nets)``, while input batches stay ``(n_nets, d, d)``. The chains are layer
descriptions (:func:`eit.models.batchnorm.bn_net`) run by the explicit engine
(:mod:`eit.sample.engine`), whose state of a network is ``X^T`` (inputs x features):

* :func:`isometry_gap_det`: ``phi`` of square batches from the determinant;
* :func:`bn_jacobian_lognorm`: ``log ||J_BN(H)||_op = -log min_i ||H_i.||`` (Lemma D.7's
  block structure; the blocks ``J_f(x) = (I - x x^T / ||x||^2) / ||x||`` have norm
  ``1 / ||x||``);
* :func:`batch_of_state`: the batch ``X^T`` (up to a factor per network) from the engine's
  state, for observers of scale-invariant statistics;
* :func:`run_chain`: ``phi(X_l)`` (an observer) and ``log ||J_BN(H_l)||`` (the engine's
  ``log_bn_jacobian``) along the chain;
* :func:`hitting_time`: ``S = min{l : phi(X_l) <= threshold}`` (eq. 96);
* :func:`tail_sums`: ``sum_{l=S+1}^{L} f_l`` for several ``L`` (Lemma D.6);
* :func:`with_isometry_gap`: BN outputs with a prescribed gap (for conditional statements);
* :func:`one_step_decrease`: ``phi(X) - phi(BN(W X))`` for many Haar ``W`` (Lemma C.2);
* :func:`first_layer_grad_op_lognorm`: ``log ||dL/dW_0||_op`` of the linear read-out loss
  ``L = <R, X_L>_F`` (``||R||_F = 1``), the engine's log-space backward pass recording
  ``log_grad_w_batch_op`` (Theorem I.1).

References
----------
A. Meterez, A. Joudaki, F. Orabona, A. Immer, G. Raetsch, H. Daneshmand, "Towards training
without depth limits: batch normalization without gradient explosion", ICLR 2024,
Appendices C, D and I.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import rescaled
from ..sample.engine import trace
from ..sample.laws import gaussian, haar_orthogonal
from .batchnorm import (
    _bn_batch,
    _ints,
    _ldexp,
    _matrices,
    _nonzero_matrices,
    bn_net,
    first_layer_grads,
    readout_pass,
)

__all__ = ["Chain", "hartley", "isometry_gap_det", "bn_rows", "bn_jacobian_lognorm",
           "batch_of_state", "run_chain", "hitting_time", "square_weights", "tail_sums",
           "with_isometry_gap", "one_step_decrease", "first_layer_grad_op_lognorm"]


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
    isometry it resolves gaps down to about 1e-15. phi is invariant under scaling and is
    computed at any scale; a zero matrix (0/0) raises.

    Examples
    --------
    >>> import torch
    >>> float(isometry_gap_det(torch.eye(3, dtype=torch.float64)))
    0.0
    """
    x = _square("x", x)
    _nonzero_matrices("x", x)
    return _gap_det(x)


def _gap_det(x: torch.Tensor) -> torch.Tensor:
    """:func:`isometry_gap_det` of validated square batches (no zero matrix)."""
    x = rescaled(x, x.ndim - 2)[0]      # scale-invariant: bit for bit at ordinary scales
    d = x.shape[-1]
    _, logabs = torch.linalg.slogdet(x)
    tr = x.square().sum(dim=(-2, -1))
    return torch.log(tr / d) - 2.0 * logabs / d


def bn_rows(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """BN of eq. (4) and the row norms it divides by: ``(H / ||H_i.||, ||H_i.||)``.

    Rows of any finite scale (an exact power-of-two rescaling where their squares would leave
    float64); a zero row raises.

    Examples
    --------
    >>> y, r = bn_rows(torch.tensor([[3.0, 4.0]], dtype=torch.float64))
    >>> y.tolist(), r.tolist()
    ([[0.6, 0.8]], [5.0])
    """
    return _bn_rows(_matrices("h", h))


def _bn_rows(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`bn_rows` of a validated batch."""
    y, e = rescaled(h, h.ndim - 1)      # bit for bit at ordinary scales (e = 0)
    norms = y.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("h has a zero row: BN(h) is undefined")
    return y / norms, _ldexp(norms.squeeze(-1), e)


def bn_jacobian_lognorm(h: torch.Tensor) -> torch.Tensor:
    """log ||J_BN(H)||_op = -log min_i ||H_i.|| for each matrix of a batch (..., d, n).

    BN acts on every row separately, so its Jacobian is block diagonal with the blocks
    ``J_f(H_i.) = (I - u u^T) / ||H_i.||`` (``u`` the unit row), of norm ``1 / ||H_i.||``.
    """
    _, norms = bn_rows(h)
    return -torch.log(norms.amin(dim=-1))


@dataclass(frozen=True)
class Chain:
    """One run of the chain for ``n_nets`` networks.

    Attributes
    ----------
    gaps : torch.Tensor
        ``phi(X_l)`` for l = 0..depth, shape ``(depth + 1, n_nets)``.
    jac : torch.Tensor
        ``log ||J_BN(H_l)||_op`` for l = 0..depth-1 (the Jacobian of X_{l+1} = BN(H_l)),
        shape ``(depth, n_nets)``.
    """

    gaps: torch.Tensor
    jac: torch.Tensor

    @property
    def depth(self) -> int:
        return self.jac.shape[0]


def _inputs(x0, n_nets: int) -> torch.Tensor:
    x = _bn_batch("x0", v.per_network("x0", x0, n_nets, square=True))
    return x.to(device=device(), dtype=DTYPE)


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
    kind = v.choice("kind (the weights)", kind, ("orthogonal", "gaussian"))
    n_nets, d = v.positive_int("n_nets", n_nets), v.positive_int("d", d)
    gen = v.generator("gen", gen, optional=False)
    if kind == "orthogonal":
        return haar_orthogonal(n_nets, d, d, gen=gen)
    return gaussian(n_nets, d, d, 1.0 / d, gen=gen)


def batch_of_state(h: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
    """The batch ``X^T`` of each network from the engine's state, up to a factor per network.

    The explicit engine (:mod:`eit.sample.engine`) carries the state of a network as unit
    vectors ``h`` (n_nets, N, d), one per input (a column of the paper's ``X``), and their
    log-norms ``log_r`` (n_nets, N). This returns ``h * exp(log_r - m)`` with ``m`` the largest
    log-norm of the network, i.e. ``X^T / exp(m)``: every scale-invariant statistic of the
    batch (the isometry gaps, BN) can be taken from it. A zero input (``log_r = -inf``) stays 0;
    a NaN or ``+inf`` log-norm raises.

    Examples
    --------
    >>> h = torch.eye(2, dtype=torch.float64).unsqueeze(0)
    >>> batch_of_state(h, torch.tensor([[1.0, 0.5]], dtype=torch.float64).log())
    tensor([[[1.0000, 0.0000],
             [0.0000, 0.5000]]], dtype=torch.float64)
    """
    h = v.tensor("h", h, ndim=3)
    if not isinstance(log_r, torch.Tensor) or not log_r.is_floating_point():
        raise TypeError(f"log_r must be a floating-point tensor, got "
                        f"{getattr(log_r, 'dtype', type(log_r).__name__)}")
    if tuple(log_r.shape) != tuple(h.shape[:2]):
        raise ValueError(f"log_r must have the shape (n_nets, N) = {tuple(h.shape[:2])} of h, "
                         f"got {tuple(log_r.shape)}")
    if bool((torch.isnan(log_r) | (log_r == math.inf)).any()):
        raise ValueError("log_r contains NaN or +inf (only -inf, a zero input, is a log-norm)")
    return _batch_of_state(h, log_r)


def _batch_of_state(h: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
    """:func:`batch_of_state` of a validated state (the engine's own)."""
    m = log_r.amax(dim=1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    return h * torch.exp(log_r - m).unsqueeze(-1)


def _gap_of_state(h: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
    """The engine observer of :func:`isometry_gap_det` (X^T has the determinant of X)."""
    return isometry_gap_det(_batch_of_state(h, log_r))


def run_chain(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
              weights: str = "orthogonal") -> Chain:
    """phi(X_l) and log ||J_BN(H_l)|| along X_{l+1} = BN(W_l X_l) for ``n_nets`` networks.

    The explicit engine on :func:`eit.models.batchnorm.bn_net` (linear activations): the gap
    of every state in the determinant form (:func:`isometry_gap_det`, an observer) and the
    batch norm layers' ``log_bn_jacobian``, ``-log min_i ||H_l,i.||`` at the actual scale.

    Parameters
    ----------
    x0 : torch.Tensor
        One square input batch (d, d) or one per network (n_nets, d, d); it is used as given
        (it need not be a BN output).
    depth : int
        The number of layers.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    weights : str
        ``'orthogonal'`` (Haar, the paper's choice) or ``'gaussian'`` (N(0, 1/d) entries).

    Returns
    -------
    Chain
        ``gaps`` ``(depth + 1, n_nets)`` and ``jac`` ``(depth, n_nets)``.

    References
    ----------
    Meterez et al. (2024), eqs. (3)-(5), Lemma D.7 and Appendix D.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.core.device import randn
    >>> c = run_chain(randn(3, 3, gen=generator(0)), 5, n_nets=2, gen=generator(1))
    >>> tuple(c.gaps.shape), tuple(c.jac.shape)
    ((6, 2), (5, 2))
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    net = bn_net(x.shape[-1], depth, weights=weights)
    t = trace(net, x.transpose(-2, -1), n_nets=n_nets, gen=gen,
              observe={"gap": _gap_of_state}, record={"log_bn_jacobian"})
    return Chain(t.observed["gap"], t.stats["log_bn_jacobian"])


def hitting_time(gaps: torch.Tensor, threshold: float) -> torch.Tensor:
    """S = min{l : phi(X_l) <= threshold} per network (eq. 96), as an integer tensor.

    ``gaps`` is ``(depth + 1, n_nets)`` (:attr:`Chain.gaps`); returns ``(n_nets,)``. Raises if
    some network never reaches the threshold within the recorded layers (the chain was too
    short to observe S).

    Examples
    --------
    >>> gaps = torch.tensor([[2.0, 2.0], [0.5, 3.0], [0.1, 0.2]], dtype=torch.float64)
    >>> hitting_time(gaps, 1.0).tolist()
    [1, 2]
    """
    if not isinstance(gaps, torch.Tensor) or not gaps.is_floating_point():
        raise TypeError(f"gaps must be a floating-point tensor (depth + 1, n_nets), got "
                        f"{getattr(gaps, 'dtype', type(gaps).__name__)}")
    if gaps.ndim != 2:
        raise ValueError(f"gaps must have shape (depth + 1, n_nets), got {tuple(gaps.shape)}")
    if bool((torch.isnan(gaps) | (gaps == -math.inf)).any()):
        raise ValueError("gaps contains NaN or -inf (a gap is >= 0; +inf, a singular batch, "
                         "is allowed)")
    threshold = v.positive_float("threshold", threshold)
    below = gaps <= threshold
    if not bool(below.any(dim=0).all()):
        raise ValueError("gaps: some networks never reach the threshold: run a deeper chain")
    return below.to(torch.int64).argmax(dim=0)


def tail_sums(values: torch.Tensor, start: torch.Tensor, ends: Sequence[int]) -> torch.Tensor:
    """``sum_{l=start+1}^{L} values[l]`` per network for each L in ``ends``.

    ``values`` has shape ``(m, n_nets)``, row l = 0..m-1 the layer l; ``start`` is an
    integer tensor ``(n_nets,)`` (for example :func:`hitting_time`). An empty sum is 0.
    Returns ``(len(ends), n_nets)``, row j the sums up to ``ends[j]``.

    Examples
    --------
    >>> values = torch.arange(8, dtype=torch.float64).view(4, 2)
    >>> tail_sums(values, torch.tensor([0, 2]), [1, 3]).tolist()
    [[2.0, 0.0], [12.0, 7.0]]
    """
    values = v.tensor("values", values, ndim=2)
    if not isinstance(start, torch.Tensor) or start.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"start must be an integer tensor (n_nets,), got "
                        f"{getattr(start, 'dtype', type(start).__name__)}")
    if tuple(start.shape) != (values.shape[1],):
        raise ValueError(f"start must have shape (n_nets,) = ({values.shape[1]},), got "
                         f"{tuple(start.shape)}")
    if bool((start < 0).any()):
        raise ValueError("start must hold layers >= 0")
    ends = _ints("ends", ends)
    if max(ends) >= values.shape[0]:
        raise ValueError(f"ends must be < {values.shape[0]} (the layers recorded in values), got "
                         f"{ends}")
    ell = torch.arange(values.shape[0], device=values.device).unsqueeze(1)
    after = ell > start.unsqueeze(0)
    rows = []
    for end in ends:
        mask = after & (ell <= end)
        rows.append(torch.where(mask, values, torch.zeros_like(values)).sum(dim=0))
    return torch.stack(rows)


def _bn_of_spectrum(u: torch.Tensor, s_log: torch.Tensor, vt: torch.Tensor, t: torch.Tensor
                    ) -> torch.Tensor:
    s = torch.exp(t.unsqueeze(-1) * s_log)
    return _bn_rows((u * s.unsqueeze(-2)) @ vt)[0]


#: the largest ``t max|z|`` of :func:`with_isometry_gap`: singular values within e^+-300
_MAX_LOG_SPREAD = 300.0


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
    found by bisection, so that ``phi(X)`` equals the target to ``tol`` relative (``tol`` in
    [1e-15, 1e-3]; a target too large for float64 raises). Returns (len(targets), d, d).

    Examples
    --------
    >>> x = with_isometry_gap(4, [0.1, 1.0])
    >>> [round(float(g), 9) for g in isometry_gap_det(x)]
    [0.1, 1.0]
    """
    d = v.positive_int("d", d)
    if d < 2:
        raise ValueError("d must be >= 2 for a non-zero isometry gap")
    targets = v.real_sequence("targets", targets, positive=True)
    gen = v.generator("gen", gen)
    tol = v.in_interval("tol", tol, 1e-15, 1e-3, closed_hi=True)
    k = len(targets)
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
    top = z.abs().amax(dim=-1)
    while True:  # grow the bracket until phi(hi) >= goal
        short = _gap_det(_bn_of_spectrum(u, z, vt, hi)) < goal
        if not bool(short.any()):
            break
        if bool((hi * top > _MAX_LOG_SPREAD).any()):
            raise ValueError(f"targets: a gap in {targets} is beyond the batches that float64 "
                             "holds (singular values spread over more than e^+-300)")
        hi = torch.where(short, 2 * hi, hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        above = _gap_det(_bn_of_spectrum(u, z, vt, mid)) > goal
        lo, hi = torch.where(above, lo, mid), torch.where(above, mid, hi)
        if bool(((hi - lo) <= tol * hi).all()):
            break
    x = _bn_of_spectrum(u, z, vt, (lo + hi) / 2)
    got = _gap_det(x)
    if not bool(((got - goal).abs() <= 1e3 * tol * goal + 1e-15).all()):
        raise ValueError(f"targets: bisection did not reach the gaps {targets} to tol = {tol} "
                         "(the gap is not resolved in float64 at that scale)")
    return x


def one_step_decrease(x: torch.Tensor, n_draws: int, *, gen: torch.Generator) -> torch.Tensor:
    """phi(X) - phi(BN(W X)) for ``n_draws`` Haar draws of W per matrix of ``x`` (k, d, d).

    Returns (k, n_draws). By Lemma B.1 every entry is >= 0 up to rounding. Singular
    matrices (phi = +inf before and after, an undefined difference) raise.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = with_isometry_gap(3, [0.5])
    >>> one_step_decrease(x, 4, gen=generator(0)).shape
    torch.Size([1, 4])
    """
    x = _square("x", x)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (k, d, d), got {tuple(x.shape)}")
    n_draws = v.positive_int("n_draws", n_draws)
    gen = v.generator("gen", gen, optional=False)
    _nonzero_matrices("x", x)
    before = _gap_det(x)
    if not bool(torch.isfinite(before).all()):
        raise ValueError("x must hold non-singular matrices (phi = +inf before and after a "
                         "layer: the decrease is undefined)")
    k, d = x.shape[0], x.shape[-1]
    w = haar_orthogonal(k * n_draws, d, d, gen=gen).view(k, n_draws, d, d)
    after = _gap_det(_bn_rows(w @ x.unsqueeze(1))[0])
    return before.unsqueeze(1) - after


def first_layer_grad_op_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                                gen: torch.Generator) -> torch.Tensor:
    """log ||dL/dW_0||_op for the chain truncated at each depth L in ``depths``.

    The loss is the linear read-out ``L = <R, X_L>_F`` with ``R`` Gaussian normalized to
    ``||R||_F = 1`` (1-Lipschitz), drawn once per network after the weights; depth L uses the
    first L layers of one deep network (Haar weights). One forward pass of the explicit engine
    on :func:`eit.models.batchnorm.bn_net`, one log-space backward pass per depth, recording
    the first dense layer's ``log_grad_w_batch_op`` (the spectral norm of the batch loss's
    weight gradient): nothing overflows at any depth.

    Parameters
    ----------
    x0 : torch.Tensor
        One square input batch (d, d) or one per network (n_nets, d, d).
    depths : sequence of int
        The depths L (positive).
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    torch.Tensor
        ``(len(depths), n_nets)``: row j is depth ``depths[j]``.

    References
    ----------
    Meterez et al. (2024), Theorem I.1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x0 = with_isometry_gap(3, [0.5])[0]
    >>> first_layer_grad_op_lognorm(x0, [1, 4], n_nets=5, gen=generator(0)).shape
    torch.Size([2, 5])
    """
    ds = _ints("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    p, r = readout_pass(bn_net(x.shape[-1], max(ds)), x, n_nets=n_nets, gen=gen, tops=ds,
                        record={"log_grad_w_batch_op"})
    return first_layer_grads(p, r, ds, "log_grad_w_batch_op")
