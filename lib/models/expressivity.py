"""Finite-sample expressivity of ReLU residual networks (Hardt & Ma 2017, Section 3, App. B).

The network of Theorem 3.2: h_0 = A_0 x (random projection to R^k), h_j = h_{j-1} +
T_{U_j, V_j, s_j}(h_{j-1}) for j = 1..l with T_{U,V,s}(h) = V ReLU(U h + s) (eq. 3.1), and a
last block into R^r. Each middle block is built by Lemma B.1 and moves k points at a time to
their surrogate labels q_j (eq. 3.2); the last block maps q_j to e_j (eq. 3.4).

Vectors are stored as rows: a set of n points in R^k is an (n, k) tensor. Everything is
float64 and deterministic given the generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ..core.device import DTYPE
from ..core.scaling import rescaled
from ..core.validate import (
    finite_real,
    generator,
    in_interval,
    nonnegative_float,
    positive_float,
    positive_int,
    tensor,
)


def _rows(name: str, value, n: int, of: str) -> torch.Tensor:
    """A non-empty list (or 1-D integer tensor) of distinct indices of the ``n`` rows of the
    argument ``of``."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in (torch.int32, torch.int64) or value.ndim != 1:
            raise TypeError(f"{name} must be a 1-D integer tensor or a list of ints, got "
                            f"{value.dtype} of shape {tuple(value.shape)}")
        idx = value.to(torch.long)
    else:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{name} must be a sequence of ints, got {type(value).__name__}")
        value = list(value)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise TypeError(f"{name} must hold ints, got {value!r}")
        idx = torch.tensor(value, dtype=torch.long)
    if idx.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if bool(((idx < 0) | (idx >= n)).any()):
        raise ValueError(f"{name} must hold indices of the {n} rows of {of}, in [0, {n}), got "
                         f"{idx.tolist()}")
    if idx.unique().numel() != idx.numel():
        raise ValueError(f"{name} must hold distinct indices, got {idx.tolist()}")
    return idx


def _labels(labels, n: int, r: int, device: torch.device | None = None) -> torch.Tensor:
    """``n`` int labels in ``[0, r)``: an integer tensor or a sequence of ints (int64, on
    ``device``; a tensor stays on its own device where ``device`` is None)."""
    if isinstance(labels, torch.Tensor):
        if labels.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"labels must be an integer tensor, got {labels.dtype}")
    elif isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__") or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in labels):
        raise TypeError(f"labels must be ints (a tensor or a sequence), got {labels!r:.60}")
    labels = torch.as_tensor(labels, dtype=torch.long, device=device)
    if labels.shape != (n,):
        raise ValueError(f"labels must hold n = {n} ints (one per row of x), got shape "
                         f"{tuple(labels.shape)}")
    if bool(((labels < 0) | (labels >= r)).any()):
        raise ValueError(f"labels must lie in [0, r) = [0, {r})")
    return labels


def _squares_finite(name: str, x: torch.Tensor) -> None:
    """The construction squares the points' norms: refuse points whose squares overflow."""
    if not bool(torch.isfinite((x * x).sum(-1)).all()):
        raise ValueError(f"{name} is too large: its squared norms exceed float64")


def unit_sphere(n: int, d: int, *, gen: torch.Generator) -> torch.Tensor:
    """n points uniform on the unit sphere of R^d (rows), drawn from ``gen``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> unit_sphere(3, 4, gen=generator(0)).norm(dim=1).round(decimals=12)
    tensor([1., 1., 1.], dtype=torch.float64)
    """
    n, d = positive_int("n", n), positive_int("d", d)
    gen = generator("gen", gen, optional=False)
    x = torch.randn(n, d, generator=gen, device=gen.device, dtype=DTYPE)
    return x / x.norm(dim=1, keepdim=True)


def min_sq_distance(x) -> float:
    """min_{i != j} ||x_i - x_j||^2: the largest rho for which Assumption 3.1 holds.

    At any scale of ``x`` (an exact power-of-two rescaling); a distance whose square
    exceeds float64 raises, and one below it rounds to 0 (as do repeated points).

    Examples
    --------
    >>> min_sq_distance(torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64))
    25.0
    """
    x = tensor("x", x, ndim=2)
    if x.shape[0] < 2:
        raise ValueError(f"x needs at least 2 points, got {x.shape[0]}")
    y, e = rescaled(x.reshape(1, -1), 1)     # one power of two for all points: exact
    x = y.reshape(x.shape)
    sq = (x * x).sum(1)
    dist = sq[:, None] + sq[None, :] - 2 * x @ x.T
    dist.fill_diagonal_(math.inf)
    try:
        return math.ldexp(float(dist.min()), 2 * int(e[0]))
    except OverflowError:
        raise ValueError("x is too large: its squared distances exceed float64") from None


def block(h, U, V, s) -> torch.Tensor:
    """T_{U,V,s}(h) = V ReLU(U h + s) (eq. 3.1), applied to every row of h.

    Examples
    --------
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> block(torch.ones(1, 2, dtype=torch.float64), I, I, torch.zeros(2, dtype=torch.float64))
    tensor([[1., 1.]], dtype=torch.float64)
    """
    h = tensor("h", h, ndim=2)
    U, V, s = tensor("U", U, ndim=2), tensor("V", V, ndim=2), tensor("s", s, ndim=1)
    if U.shape[1] != h.shape[1] or s.shape != (U.shape[0],) or V.shape[1] != U.shape[0]:
        raise ValueError(f"U (m, k), V (k', m) and s (m,) must compose with h (n, k): got U "
                         f"{tuple(U.shape)}, V {tuple(V.shape)}, s {tuple(s.shape)}, h "
                         f"{tuple(h.shape)}")
    out = torch.relu(h @ U.T + s) @ V.T
    if not bool(torch.isfinite(out).all()):
        raise ValueError("h, U, V, s: the block's output exceeds float64")
    return out


def lemma_b1(alpha, S, target, rho_p: float, *, skip=None) -> tuple[torch.Tensor, ...]:
    """U, V, s of Lemma B.1: alpha_i + T(alpha_i) = target_i for i in S, T(alpha_i) = 0 else.

    Rows of U are alpha_i (i in S), s = -(1 - 2 rho') 1, column i of V is
    (target_i - skip(alpha_i)) / (||alpha_i||^2 - (1 - 2 rho')). ``skip`` is the residual path
    (identity by default; a fixed k -> r map for the last block). ``target`` has one row per
    element of S. A point of S with ||alpha_i||^2 <= 1 - 2 rho' gets a zero column of V (it
    cannot be moved: hypothesis a fails for it).

    Examples
    --------
    >>> alpha = torch.eye(2, dtype=torch.float64)
    >>> U, V, s = lemma_b1(alpha, [0], torch.zeros(1, 2, dtype=torch.float64), 0.1)
    >>> tuple(V.shape)
    (2, 1)
    """
    alpha = tensor("alpha", alpha, ndim=2)
    _squares_finite("alpha", alpha)
    rho_p = in_interval("rho_p", finite_real("rho_p", rho_p), 0.0, 0.5)
    S = _rows("S", S, alpha.shape[0], "alpha").to(alpha.device)
    target = tensor("target", target, ndim=2)
    if target.shape[0] != S.numel():
        raise ValueError(f"S must have one row of target per index, got {S.numel()} indices "
                         f"and {target.shape[0]} target rows")
    if skip is not None and not callable(skip):
        raise TypeError(f"skip must be callable or None, got {type(skip).__name__}")
    U = alpha[S]
    t = 1 - 2 * rho_p
    margin = (U * U).sum(1) - t
    base = U if skip is None else skip(U)
    if not isinstance(base, torch.Tensor) or base.shape != target.shape:
        raise ValueError(f"skip must map the rows of alpha to target's shape "
                         f"{tuple(target.shape)}, got {getattr(base, 'shape', base)!r}")
    # A point with ||alpha_i||^2 <= 1 - 2 rho' never activates its unit: it cannot be moved,
    # its column of V is set to 0 (the hypotheses of the lemma fail for it).
    ok = margin > 0
    V = torch.where(ok[:, None], (target - base) / torch.where(ok, margin, 1.0)[:, None],
                    torch.zeros_like(target)).T
    s = torch.full((S.numel(),), -t, dtype=alpha.dtype, device=alpha.device)
    return U, V, s


def lemma_b1_conditions(alpha, S, rho_p: float) -> dict[str, bool]:
    """Which hypotheses of Lemma B.1 hold for (alpha, S, rho').

    * ``norms``: 1 - rho' <= ||alpha_i||^2 <= 1 + rho' for all i (hypothesis a);
    * ``printed``: ||alpha_i - alpha_j|| >= 3 rho' whenever i != j and S meets {i, j}
      (hypothesis b as printed);
    * ``corrected``: ||alpha_i - alpha_j||^2 >= 6 rho' for the same pairs (what eq. B.1 needs
      with the factor 1/2 of the polarization identity);
    * ``needed``: the property the construction uses: <alpha_i, alpha_j> <= 1 - 2 rho' for
      i in S, j != i, and ||alpha_i||^2 > 1 - 2 rho' for i in S.

    Examples
    --------
    >>> lemma_b1_conditions(torch.eye(2, dtype=torch.float64), [0], 0.1)['norms']
    True
    """
    alpha = tensor("alpha", alpha, ndim=2)
    _squares_finite("alpha", alpha)
    rho_p = in_interval("rho_p", finite_real("rho_p", rho_p), 0.0, 0.5)
    S = _rows("S", S, alpha.shape[0], "alpha").to(alpha.device)
    sq = (alpha * alpha).sum(1)
    gram = alpha[S] @ alpha.T                       # |S| x n
    dist2 = sq[S][:, None] + sq[None, :] - 2 * gram
    other = torch.ones_like(gram, dtype=torch.bool)
    other[torch.arange(S.numel()), S] = False
    t = 1 - 2 * rho_p
    return {
        "norms": bool(((sq >= 1 - rho_p) & (sq <= 1 + rho_p)).all()),
        "printed": bool((dist2[other] >= (3 * rho_p) ** 2).all()),
        "corrected": bool((dist2[other] >= 6 * rho_p).all()),
        "needed": bool((gram[other] <= t).all() and (sq[S] > t).all()),
    }


@dataclass(frozen=True)
class ResidualConstruction:
    """The network of Theorem 3.2 with its weights (rows-as-points convention).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = unit_sphere(6, 5, gen=generator(0))
    >>> net = build(x, torch.tensor([0, 1, 0, 1, 0, 1]), 2, 40, 0.1, gen=generator(1))
    >>> (net.k, net.ell, net.r)
    (40, 1, 2)
    """

    A0: torch.Tensor                     # (k, d) random projection, entries N(0, 1/k)
    blocks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]   # (U, V, s), k x k
    last: tuple[torch.Tensor, torch.Tensor, torch.Tensor]           # U (r, k), V (r, r), s (r)
    q: torch.Tensor                      # (r, k) surrogate labels, unit vectors
    rho_p: float
    conditions: list[dict[str, bool]] = field(default_factory=list)   # per block, last included
    # per block (last included): max |h + T(h) - intended| over all points, where intended is
    # the target for the points of S and the unchanged h for every other point
    block_errors: list[float] = field(default_factory=list)

    @property
    def k(self) -> int:
        return self.A0.shape[0]

    @property
    def ell(self) -> int:
        return len(self.blocks)

    @property
    def r(self) -> int:
        return self.q.shape[0]


def skip_map(h: torch.Tensor, r: int) -> torch.Tensor:
    """The residual path of the last block, R^k -> R^r: truncate or pad with zeros.

    Examples
    --------
    >>> skip_map(torch.ones(1, 3, dtype=torch.float64), 2)
    tensor([[1., 1.]], dtype=torch.float64)
    """
    h, r = tensor("h", h, ndim=2), positive_int("r", r)
    k = h.shape[1]
    if r <= k:
        return h[:, :r]
    return torch.cat([h, h.new_zeros(h.shape[0], r - k)], dim=1)


def build(x, labels, r: int, k: int, rho_p: float, *,
          gen: torch.Generator, project: bool = True) -> ResidualConstruction:
    """Construct the network of Theorem 3.2 (proofs of Lemma B.2 and Theorem 3.2).

    ``x``: (n, d) inputs, ``labels``: n ints in [0, r). A_0 has N(0, 1/k) entries (the
    scaling that makes ||A_0 x|| close to 1), q_1..q_r are uniform unit vectors of R^k, and
    block j moves the points jk+1..(j+1)k of the current hidden layer to their q. Lemma B.1
    is applied whether or not its hypotheses hold; :func:`lemma_b1_conditions` of every block
    (the last one included) is recorded in ``conditions``, and how far each block is from
    doing its job (moving S to its targets and fixing the rest) in ``block_errors``.
    ``project=False`` skips the random projection (A_0 = I, needs d = k): the inputs are then
    the z^(i) of Lemma B.2 themselves.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = unit_sphere(4, 5, gen=generator(0))
    >>> build(x, torch.tensor([0, 1, 0, 1]), 2, 40, 0.1, gen=generator(1)).r
    2
    """
    x = tensor("x", x, ndim=2)
    _squares_finite("x", x)
    r, k = positive_int("r", r), positive_int("k", k)
    labels = _labels(labels, x.shape[0], r)
    rho_p = in_interval("rho_p", finite_real("rho_p", rho_p), 0.0, 0.5)
    gen = generator("gen", gen, optional=False)
    if not isinstance(project, bool):
        raise TypeError(f"project must be a bool, got {type(project).__name__}")
    n, d = x.shape
    x = x.to(gen.device)                 # the points meet the weights drawn on gen's device
    if project:
        A0 = torch.randn(k, d, generator=gen, device=gen.device, dtype=DTYPE) / math.sqrt(k)
    elif d != k:
        raise ValueError(f"project=False needs x of dimension d = k = {k}, got d = {d}")
    else:
        A0 = torch.eye(k, dtype=DTYPE, device=x.device)
    q = unit_sphere(r, k, gen=gen)
    h = x @ A0.T
    v = q[labels]
    blocks, conditions, errors = [], [], []
    for start in range(0, n, k):
        S = torch.arange(start, min(start + k, n))
        conditions.append(lemma_b1_conditions(h, S, rho_p))
        U, V, s = lemma_b1(h, S, v[S], rho_p)
        blocks.append((U, V, s))
        intended = h.clone()
        intended[S] = v[S]
        h = h + block(h, U, V, s)
        errors.append(float((h - intended).abs().max()))
    eye_r = torch.eye(r, dtype=DTYPE, device=q.device)
    conditions.append(lemma_b1_conditions(q, torch.arange(r), rho_p))
    last = lemma_b1(q, torch.arange(r), eye_r, rho_p, skip=lambda u: skip_map(u, r))
    errors.append(float((skip_map(q, r) + block(q, *last) - eye_r).abs().max()))
    return ResidualConstruction(A0, blocks, last, q, rho_p, conditions, errors)


def forward(net: ResidualConstruction, x) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the network on ``x`` (n, d): returns (h_l, y_hat), shapes (n, k) and (n, r).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = unit_sphere(4, 5, gen=generator(0))
    >>> net = build(x, torch.tensor([0, 1, 0, 1]), 2, 40, 0.1, gen=generator(1))
    >>> forward(net, x)[1].shape
    torch.Size([4, 2])
    """
    if not isinstance(net, ResidualConstruction):
        raise TypeError(f"net must be a ResidualConstruction, got {type(net).__name__}")
    x = tensor("x", x, ndim=2)
    if x.shape[1] != net.A0.shape[1]:
        raise ValueError(f"x must have shape (n, d) with d = {net.A0.shape[1]} (the inputs of "
                         f"net), got {tuple(x.shape)}")
    h = x.to(net.A0.device) @ net.A0.T      # the points meet the weights
    for U, V, s in net.blocks:
        h = h + block(h, U, V, s)
    U, V, s = net.last
    return h, skip_map(h, net.r) + block(h, U, V, s)


def parameter_count(net: ResidualConstruction, d: int) -> int:
    """Weights and biases: kd + l (2k^2 + k) + (rk + r^2 + r) (Section 3).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = unit_sphere(4, 5, gen=generator(0))
    >>> parameter_count(build(x, torch.tensor([0, 1, 0, 1]), 2, 40, 0.1, gen=generator(1)), 5)
    3526
    """
    if not isinstance(net, ResidualConstruction):
        raise TypeError(f"net must be a ResidualConstruction, got {type(net).__name__}")
    d = positive_int("d", d)
    k, r = net.k, net.r
    return k * d + net.ell * (2 * k * k + k) + r * k + r * r + r


def k_for(n: int, rho: float, c: float = 10.0) -> int:
    """k = ceil(c log(n) / rho^2), the width of the proof of Theorem 3.2 (c = 10 works).

    Examples
    --------
    >>> k_for(100, 1.0)
    47
    """
    n = positive_int("n", n)
    rho = in_interval("rho", positive_float("rho", rho), 0.0, 4.0, closed_hi=True)
    c = positive_float("c", c)
    width = c * math.log(n) / rho**2 if rho**2 > 0 else math.inf
    if not math.isfinite(width):
        raise ValueError(f"rho and c give a width c log(n) / rho^2 beyond float64 (rho = {rho!r}"
                         f", c = {c!r})")
    return math.ceil(width)


__all__ = ["unit_sphere", "min_sq_distance", "block", "lemma_b1", "lemma_b1_conditions",
           "ResidualConstruction", "skip_map", "build", "forward", "parameter_count", "k_for",
           "random_labelled", "label_errors", "block_log", "printed_last_block_composes"]


def random_labelled(n: int, d: int, r: int, *,
                    gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n points uniform on the unit sphere of R^d with uniformly random labels in [0, r).

    Generated data for Theorem 3.2 (Assumption 3.1 holds with any rho below the smallest
    squared distance); the points are drawn first, then the labels.

    Returns
    -------
    x : (n, d) float64; labels : (n,) int64.

    References
    ----------
    Hardt & Ma (2017), Assumption 3.1 and Theorem 3.2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x, labels = random_labelled(5, 3, 2, gen=generator(0))
    >>> tuple(x.shape), bool(((labels >= 0) & (labels < 2)).all())
    ((5, 3), True)
    """
    n, d, r = positive_int("n", n), positive_int("d", d), positive_int("r", r)
    gen = generator("gen", gen, optional=False)
    x = unit_sphere(n, d, gen=gen)
    labels = torch.randint(0, r, (n,), generator=gen, device=gen.device)
    return x, labels


def label_errors(net: ResidualConstruction, x, labels) -> torch.Tensor:
    """Per point, max_j |N(x)_j - y_j| against the one-hot label y (shape (n,)).

    Theorem 3.2 says that these are all 0; in float64 they are a few multiples of the
    machine epsilon.

    References
    ----------
    Hardt & Ma (2017), Theorem 3.2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x, labels = random_labelled(6, 64, 2, gen=generator(0))
    >>> net = build(x, labels, 2, 64, 0.2, gen=generator(1), project=False)
    >>> float(label_errors(net, x, labels).max()) < 1e-12
    True
    """
    _, y_hat = forward(net, x)
    labels = _labels(labels, y_hat.shape[0], net.r, y_hat.device)
    one_hot = torch.eye(net.r, dtype=torch.float64, device=y_hat.device)[labels]
    return (y_hat - one_hot).abs().amax(1)


def block_log(net: ResidualConstruction, tol: float) -> list[tuple[bool, bool]]:
    """For every block (the last included): (corrected hypotheses held, block exact).

    The corrected hypotheses of Lemma B.1 are (a), norms in [1 - rho', 1 + rho'], and (b'),
    squared distances >= 6 rho' (:func:`lemma_b1_conditions`); a block is exact when its
    error in ``net.block_errors`` is at most ``tol``.

    References
    ----------
    Hardt & Ma (2017), Lemma B.1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x, labels = random_labelled(6, 64, 2, gen=generator(0))
    >>> log = block_log(build(x, labels, 2, 64, 0.2, gen=generator(1), project=False), 1e-12)
    >>> len(log), all(exact for _, exact in log)
    (2, True)
    """
    if not isinstance(net, ResidualConstruction):
        raise TypeError(f"net must be a ResidualConstruction, got {type(net).__name__}")
    tol = nonnegative_float("tol", tol)
    return [(c["norms"] and c["corrected"], e <= tol)
            for c, e in zip(net.conditions, net.block_errors, strict=True)]


def printed_last_block_composes(k: int, r: int) -> bool:
    """Whether the last block as printed, y = h_l + B ReLU(A h_l + b), has shapes that compose.

    With the printed A_{l+1} in R^{k x r}, B_{l+1} in R^{r x r}, h_l in R^k: the shapes are
    tried on tensors of ones, and a shape error means they do not compose.

    References
    ----------
    Hardt & Ma (2017), proof of Theorem 3.2, the last block (eq. 3.4).

    Examples
    --------
    >>> printed_last_block_composes(5, 3), printed_last_block_composes(3, 3)
    (False, True)
    """
    k, r = positive_int("k", k), positive_int("r", r)
    h_l, A_last, B_last = torch.ones(k), torch.ones(k, r), torch.ones(r, r)
    try:
        _ = h_l + B_last @ torch.relu(A_last @ h_l + torch.ones(k))
    except RuntimeError:
        return False
    return True

