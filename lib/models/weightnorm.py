"""Weight-normalized ReLU layers (Arpit & Bengio 2019, section 4) and the constant K_n.

A weight-normalized layer is ``a = k * W_hat h`` with ``W_hat_i = W_i / ||W_i||`` (eqs. 18-19);
the paper proposes the gain ``k = sqrt(2 fan_in / fan_out)`` (Corollary 2, eq. 30), and
traditional weight normalization (Salimans & Kingma 2016) uses ``k = 1``.

Exact part (SymPy): :func:`sphere_area` in both conventions, :func:`wallis`, the constant
K_n as printed in the paper (:func:`k_printed`, main text eq. 20 or appendix eq. 171) and as
derived (:func:`k_constant`, the Beta integral of the squared first coordinate of a uniform
unit vector). Sampling part (torch): rows from several laws (:func:`rows`),
:func:`normalize_rows`, :func:`weight_normalized` (an :data:`eit.sample.laws.Initializer`
returning ``k * W_hat``, usable in :func:`eit.sample.mlp.relu_mlp`) and :func:`layer_sq_ratio`
(Monte Carlo of ||v||^2/||u||^2 for Theorem 4 and Proposition 2).

Networks: :func:`wn_relu_mlp` (forward and backward pass with per-sample gradients with
respect to the un-normalized weights, eqs. 24-28) and :func:`prop3_sq_norm` (Proposition 3).

API (stable): ``sphere_area, wallis, k_printed, k_constant, LAWS, rows, normalize_rows,
proposed_gain, weight_normalized, layer_sq_ratio, WNStats, wn_relu_mlp, prop3_sq_norm,
residual_sq_ratio``. :func:`residual_sq_ratio` propagates the residual networks of Appendix A
(plain or weight-normalized blocks).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import sympy as sp
import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..sample.laws import Initializer

Convention = Literal["ambient", "intrinsic"]
Source = Literal["main", "appendix"]

# ----------------------------------------------------------------------------- exact part


def sphere_area(q, convention: Convention = "ambient") -> sp.Expr:
    """Surface area S_q of a unit sphere, as a SymPy expression (``q`` an int or a symbol).

    ``'ambient'``: the sphere in R^q, S_q = 2 pi^(q/2) / Gamma(q/2) (so S_2 = 2 pi, S_3 = 4 pi).
    ``'intrinsic'``: the q-dimensional sphere S^q in R^(q+1), i.e. the ambient S_(q+1)
    (so S_1 = 2 pi, S_2 = 4 pi, and S_0 = 2 counts the two points of S^0).
    """
    if convention not in ("ambient", "intrinsic"):
        raise ValueError(f"convention must be 'ambient' or 'intrinsic', got {convention!r}")
    q = sp.sympify(q)
    d = q if convention == "ambient" else q + 1
    return 2 * sp.pi ** (d / 2) / sp.gamma(d / 2)


def wallis(q) -> sp.Expr:
    """W_q = int_0^(pi/2) sin^q(theta) d theta = sqrt(pi) Gamma((q+1)/2) / (2 Gamma(q/2 + 1)).

    The closed form of the Beta integral; it satisfies W_q = (q-1)/q W_(q-2), eq. (183).
    """
    q = sp.sympify(q)
    return sp.sqrt(sp.pi) * sp.gamma((q + 1) / 2) / (2 * sp.gamma(q / 2 + 1))


def _int_n(name: str, n, lo: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {n!r}")
    return n


def _product(factor: Callable[[int], sp.Rational], upto: int) -> sp.Expr:
    out = sp.Integer(1)
    for j in range(1, upto + 1):
        out *= factor(j)
    return out


def k_printed(n: int, source: Source = "main", convention: Convention = "intrinsic") -> sp.Expr:
    """The constant K_n exactly as printed, evaluated for an integer ``n >= 1``.

    ``source='main'`` is eq. (20): for even n, 2 S_(n-1)/S_n * (2/3 * 4/5 ... (n-2)/(n-1));
    for odd n, 2 S_(n-1)/S_n * (1/2 * 3/4 ... (n-2)/(n-1)) * pi/2.
    ``source='appendix'`` is eq. (171)/(191), the same two products with the parity cases
    swapped. There a product's last factor (n-2)/(n-1) does not belong to its pattern, so it
    is read as the pattern's factors up to (n-2)/(n-1) (the only reading that defines it):
    odd n gives prod_{j<=(n-3)/2} 2j/(2j+1), even n gives prod_{j<=(n-2)/2} (2j-1)/(2j) * pi/2.
    Empty products are 1. ``convention`` fixes what S_n means (see :func:`sphere_area`).
    """
    n = _int_n("n", n)
    if source not in ("main", "appendix"):
        raise ValueError(f"source must be 'main' or 'appendix', got {source!r}")
    ratio = 2 * sphere_area(n - 1, convention) / sphere_area(n, convention)
    if convention == "ambient" and n == 1:
        raise ValueError("n must be >= 2 with the ambient convention (S_0 of R^0 is undefined)")
    evens = lambda upto: _product(lambda j: sp.Rational(2 * j, 2 * j + 1), upto)  # noqa: E731
    odds = lambda upto: _product(lambda j: sp.Rational(2 * j - 1, 2 * j), upto) * sp.pi / 2  # noqa: E731
    even_case = (source == "main") == (n % 2 == 0)
    # 2/3 ... pattern: factors 2j/(2j+1) with 2j+1 <= n-1; 1/2 ... pattern: 2j <= n-1.
    product = evens((n - 2) // 2) if even_case else odds((n - 1) // 2)
    return sp.nsimplify(sp.simplify(ratio * product))


def k_constant(n) -> sp.Expr:
    """The constant K_n = E||ReLU(sqrt(2n/m) R_hat u)||^2 / ||u||^2 as derived (Theorem 4).

    K_n = 2n E[max(0, t)^2] = n E[t^2], t the first coordinate of a uniform unit vector of R^n.
    For n >= 2, t has density (1-t^2)^((n-3)/2) / B(1/2, (n-1)/2) on [-1, 1], and
    E[t^2] = B(3/2, (n-1)/2) / B(1/2, (n-1)/2) = 1/n; for n = 1, t = +-1. Hence K_n = 1.
    ``n`` may be an int >= 1 or a positive SymPy symbol (then n >= 2 is assumed).
    """
    if isinstance(n, sp.Symbol):
        if not n.is_positive:
            raise ValueError("n must be a positive symbol")
    else:
        n = _int_n("n", n)
        if n == 1:
            return sp.Integer(1)  # t = +-1 with probability 1/2 each: 2 * (1/2) * 1
    a = sp.Rational(1, 2)
    b = (sp.sympify(n) - 1) / 2
    second_moment = sp.beta(a + 1, b) / sp.beta(a, b)
    return sp.simplify(sp.gammasimp(sp.expand_func(n * second_moment)))


# ---------------------------------------------------------------------------- sampling part

#: Row laws: isotropic ones (``gaussian``, ``sphere``, ``student_t``) and two controls that
#: are not isotropic (``cube``: i.i.d. U(-1, 1) entries; ``elongated``: Gaussian whose first
#: coordinate has standard deviation 2).
LAWS = ("gaussian", "sphere", "student_t", "cube", "elongated")
Law = Literal["gaussian", "sphere", "student_t", "cube", "elongated"]


def rows(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
         law: Law = "gaussian", df: int = 3, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Un-normalized weight matrices ``(n_nets, fan_out, fan_in)`` with i.i.d. rows of a law.

    ``gaussian``: N(0, I). ``sphere``: uniform on the sphere of radius sqrt(fan_in).
    ``student_t``: multivariate t with ``df`` degrees of freedom, g / sqrt(chi2_df / df) with
    one chi-squared per row (isotropic, heavy-tailed). ``cube``, ``elongated``: see :data:`LAWS`.
    """
    n_nets, fan_out, fan_in = (v.positive_int("n_nets", n_nets),
                               v.positive_int("fan_out", fan_out),
                               v.positive_int("fan_in", fan_in))
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    df = v.positive_int("df", df)
    if law == "cube":
        return 2.0 * rand(n_nets, fan_out, fan_in, gen=gen, dtype=dtype) - 1.0
    g = randn(n_nets, fan_out, fan_in, gen=gen, dtype=dtype)
    if law == "sphere":
        return math.sqrt(fan_in) * g / g.norm(dim=-1, keepdim=True)
    if law == "student_t":
        chi2 = randn(n_nets, fan_out, df, gen=gen, dtype=dtype).square().sum(-1, keepdim=True)
        return g / torch.sqrt(chi2 / df)
    if law == "elongated":
        g[..., 0] *= 2.0
    return g


def normalize_rows(w: torch.Tensor) -> torch.Tensor:
    """W_hat: every row of ``w`` divided by its Euclidean norm, eq. (19)."""
    w = v.tensor("w", w, ndim=(2, 3))
    norms = w.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("w has a zero row, which cannot be normalized")
    return w / norms


def proposed_gain(fan_in: int, fan_out: int, gamma: float = 2.0) -> float:
    """The gain k = sqrt(gamma fan_in / fan_out): Corollary 2 and eq. (30) of Arpit & Bengio
    (2019) with gamma = 2; Arpit, Campos & Bengio (2019) use gamma = 1 without a ReLU and
    gamma = 1/B on the last layer of a residual block."""
    fan_in, fan_out = v.positive_int("fan_in", fan_in), v.positive_int("fan_out", fan_out)
    return math.sqrt(v.positive_float("gamma", gamma) * fan_in / fan_out)


def weight_normalized(gain: float | Callable[[int, int], float] = proposed_gain,
                      law: Law = "gaussian") -> Initializer:
    """An :data:`~eit.sample.laws.Initializer` returning the effective matrix ``k W_hat``.

    ``gain`` is a number (1.0 for traditional weight normalization) or a rule
    ``gain(fan_in, fan_out)`` (default :func:`proposed_gain`). Passing the result to
    :func:`eit.sample.mlp.relu_mlp` propagates a weight-normalized network, eq. (18); the
    gradient it reports is with respect to the effective matrix, i.e. ||dl/dW_hat|| / k.
    """
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    if callable(gain):
        rule = gain
    else:
        k = v.positive_float("gain", gain)
        rule = lambda fan_in, fan_out: k  # noqa: E731

    def init(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator) -> torch.Tensor:
        w = normalize_rows(rows(n_nets, fan_out, fan_in, gen=gen, law=law))
        return rule(fan_in, fan_out) * w

    init.__name__ = f"weight_normalized_{law}"
    return init


def layer_sq_ratio(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
                   law: Law = "gaussian", mask: str = "relu", gain: float | None = None,
                   chunk: int = 2**22) -> torch.Tensor:
    """||v||^2 / ||u||^2 for ``n_nets`` independent weight-normalized layers applied to u.

    ``mask='relu'``: v = ReLU(k R_hat u) (Theorem 4). ``mask='bernoulli'``: v = k (R_hat u) * z
    with z_i ~ Bernoulli(1/2) independent of R (Proposition 2). R has ``m`` i.i.d. rows of
    ``law`` in R^n, n = len(u); the default gain is k = sqrt(2n/m). The expectation is K_n.
    Rows are materialized in chunks of at most ``chunk`` entries.
    """
    u = v.tensor("u", u, ndim=1).to(device=device(), dtype=DTYPE)
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    chunk = v.positive_int("chunk", chunk)
    if mask not in ("relu", "bernoulli"):
        raise ValueError(f"mask must be 'relu' or 'bernoulli', got {mask!r}")
    n = u.numel()
    if not bool((u != 0).any()):
        raise ValueError("u must be a non-zero vector")
    k = proposed_gain(n, m) if gain is None else v.positive_float("gain", gain)
    per = max(1, chunk // (m * n))
    out = []
    for start in range(0, n_nets, per):
        b = min(per, n_nets - start)
        a = k * torch.matmul(normalize_rows(rows(b, m, n, gen=gen, law=law)), u)
        if mask == "relu":
            a = a.clamp_min(0)
        else:
            a = a * (rand(b, m, gen=gen) < 0.5)
        out.append(a.square().sum(-1))
    return torch.cat(out) / u.square().sum()




# ----------------------------------------------------------- weight-normalized network pass


@dataclass(frozen=True)
class WNStats:
    """Per-layer norms of weight-normalized ReLU networks (natural logarithms).

    ``log_h[l]``: log ||h^l||, l = 0..L, shape (L+1, n_nets, N). ``log_delta[l-1]``:
    log ||dl/da^l||, l = 1..L. ``log_grad_w[l-1]``: log ||dl/dW^l||_F for the *un-normalized*
    weights W^l (eqs. 27-28), per sample. ``gains``: k_1..k_L; ``fans``: n_0..n_L.
    """

    log_h: torch.Tensor
    log_delta: torch.Tensor
    log_grad_w: torch.Tensor
    gains: tuple[float, ...]
    fans: tuple[int, ...]

    @property
    def log_h_ratio(self) -> torch.Tensor:
        """log(||h^l|| / ||x||), l = 0..L."""
        return self.log_h - self.log_h[0]

    @property
    def log_grad_w_hat(self) -> torch.Tensor:
        """log ||dl/dW_hat^l||_F = log(k_l ||dl/da^l|| ||h^{l-1}||), eq. (24)."""
        k = torch.tensor(self.gains, dtype=self.log_h.dtype).log().view(-1, 1, 1)
        return k.to(self.log_h.device) + self.log_delta + self.log_h[:-1]

    def log_grad_ratio(self, which: str = "w") -> torch.Tensor:
        """log of ||dl/dW^l|| (``'w'``) or ||dl/dW_hat^l|| (``'w_hat'``) over
        sqrt(2 n_{l-1}/n_l) ||delta|| ||x||, the ratio of Figure 4 (eqs. 22 and 26)."""
        if which not in ("w", "w_hat"):
            raise ValueError(f"which must be 'w' or 'w_hat', got {which!r}")
        num = self.log_grad_w if which == "w" else self.log_grad_w_hat
        fans = self.fans
        ref = torch.tensor([0.5 * math.log(2 * a / b) for a, b in zip(fans[:-1], fans[1:])],
                           dtype=num.dtype, device=num.device).view(-1, 1, 1)
        return num - ref - self.log_delta[-1] - self.log_h[0]


def wn_relu_mlp(x: torch.Tensor, widths, *, n_nets: int, gen: torch.Generator,
                gain: float | Callable[[int, int], float] = proposed_gain,
                law: Law = "gaussian", row_norm: float | None = 1.0,
                delta="random") -> WNStats:
    """Forward and backward pass of ``n_nets`` weight-normalized ReLU networks, eq. (18).

    Layer l computes a^l = k_l W_hat^l h^{l-1}, h^l = ReLU(a^l), with W^l rows i.i.d. from
    ``law``, rescaled to norm ``row_norm`` (the c of Proposition 3; None keeps the law's
    norms). ``gain``: a number (1.0: traditional weight normalization) or a rule
    gain(fan_in, fan_out) (default :func:`proposed_gain`). ``delta``: ``'random'`` (dl/da^L
    standard Gaussian, independent of the network) or a loss head ``loss_grad(h^L)``
    returning dl/dh^L (e.g. :class:`eit.sample.heads.SoftmaxCrossEntropy`). Per-sample gradients
    with respect to the un-normalized W^l follow eqs. (27)-(28):
    ||dl/dW_i|| = k |delta_i| ||(I - W_hat_i W_hat_i^T) h|| / ||W_i||.
    Weights are kept for the backward pass (depths of tens of layers, widths of thousands).
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    if row_norm is not None:
        row_norm = v.positive_float("row_norm", row_norm)
    if callable(gain):
        rule = gain
    else:
        k_const = v.positive_float("gain", gain)
        rule = lambda fan_in, fan_out: k_const  # noqa: E731
    if not (delta == "random" or callable(delta)):
        raise ValueError(f"delta must be 'random' or a callable, got {delta!r}")
    x = v.tensor("x", x, ndim=(2, 3)).to(device=device(), dtype=DTYPE)
    h = x.unsqueeze(0).expand(n_nets, -1, -1) if x.ndim == 2 else x
    if h.shape[0] != n_nets:
        raise ValueError(f"x has {h.shape[0]} networks on axis 0 but n_nets = {n_nets}")
    fans = [h.shape[-1], *widths]
    gains, w_hats, w_norms, pre, hs = [], [], [], [], [h]
    for fan_in, fan_out in zip(fans[:-1], fans[1:], strict=True):
        w = rows(n_nets, fan_out, fan_in, gen=gen, law=law)
        norms = w.norm(dim=-1)
        w_hat = w / norms.unsqueeze(-1)
        k = float(rule(fan_in, fan_out))
        a = k * torch.matmul(h, w_hat.transpose(-2, -1))
        h = a.clamp_min(0)
        gains.append(k)
        w_hats.append(w_hat)
        w_norms.append(norms if row_norm is None else torch.full_like(norms, row_norm))
        pre.append(a)
        hs.append(h)
    g = randn(*h.shape, gen=gen) if delta == "random" else delta(h)
    g = (pre[-1] > 0) * g
    deltas = [g]
    for l in range(len(widths) - 1, 0, -1):
        g = (pre[l - 1] > 0) * (gains[l] * torch.matmul(g, w_hats[l]))
        deltas.append(g)
    deltas = deltas[::-1]
    grads = []
    for l, d in enumerate(deltas):
        h_prev, a = hs[l], pre[l]
        k = gains[l]
        # ||(I - w w^T) h||^2 = ||h||^2 - (w.h)^2 and w.h = a / k
        perp = (h_prev.square().sum(-1, keepdim=True) - (a / k).square()).clamp_min(0)
        sq = (k**2 * d.square() * perp / w_norms[l].square().unsqueeze(-2)).sum(-1)
        grads.append(0.5 * torch.log(sq))
    log_h = torch.stack([t.norm(dim=-1).log() for t in hs])
    log_delta = torch.stack([d.norm(dim=-1).log() for d in deltas])
    return WNStats(log_h, log_delta, torch.stack(grads), tuple(gains), tuple(fans))


def prop3_sq_norm(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
                  law: Law = "gaussian", row_norm: float | None = 1.0,
                  z: str = "bernoulli") -> torch.Tensor:
    """||M||_F^2 of Proposition 3 for ``n_nets`` draws: M = sqrt(2n/m) diag(z) H with rows
    H_i = (I - R_hat_i R_hat_i^T) u / ||R_i||, R_i i.i.d. from ``law`` rescaled to norm
    ``row_norm`` (c; None keeps the law's norms), z independent of R: ``'bernoulli'``
    (Bernoulli(1/2)) or ``'gaussian'`` (standard normal). Divided by ||u||^2.
    """
    u = v.tensor("u", u, ndim=1).to(device=device(), dtype=DTYPE)
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    if z not in ("bernoulli", "gaussian"):
        raise ValueError(f"z must be 'bernoulli' or 'gaussian', got {z!r}")
    if row_norm is not None:
        row_norm = v.positive_float("row_norm", row_norm)
    n = u.numel()
    r = rows(n_nets, m, n, gen=gen, law=law)
    norms = r.norm(dim=-1)
    proj = torch.matmul(r / norms.unsqueeze(-1), u)                 # R_hat_i . u
    perp = (u.square().sum() - proj.square()).clamp_min(0)          # ||(I - P) u||^2
    c2 = norms.square() if row_norm is None else row_norm**2
    if z == "bernoulli":
        zz = (rand(n_nets, m, gen=gen) < 0.5).to(DTYPE)
    else:
        zz = randn(n_nets, m, gen=gen)
    return (2 * n / m) * (zz.square() * perp / c2).sum(-1) / u.square().sum()


def residual_sq_ratio(x: torch.Tensor, width: int, blocks: int, *, n_nets: int,
                      gen: torch.Generator, init: Initializer | None = None,
                      block_depth: int = 2, gamma: float | None = None) -> torch.Tensor:
    """||h^b||^2 / ||x||^2, b = 0..B, for residual ReLU networks (Appendix A, eq. 31).

    h^{b+1} = h^b + gamma F_b(h^b), each F_b a ReLU network of ``block_depth`` square layers
    of ``width`` units (eq. 1, or eq. 30 with ``init=weight_normalized()``), weights from
    ``init`` (default He with fan-out, N(0, 2/width)). ``gamma`` defaults to 1/B (Theorem 5).
    ``x``: (N, width), shared by the networks. Returns shape (B+1, n_nets, N).
    """
    from ..sample.laws import he

    width, blocks = v.positive_int("width", width), v.positive_int("blocks", blocks)
    n_nets = v.positive_int("n_nets", n_nets)
    block_depth = v.positive_int("block_depth", block_depth)
    gamma = 1.0 / blocks if gamma is None else v.positive_float("gamma", gamma)
    init = he("fan_out") if init is None else init
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    if x.shape[-1] != width:
        raise ValueError(f"x must have {width} columns (the width), got {x.shape[-1]}")
    h = x.unsqueeze(0).expand(n_nets, -1, -1)
    x2 = x.square().sum(-1)
    out = [h.square().sum(-1) / x2]
    for _ in range(blocks):
        g = h
        for _ in range(block_depth):
            g = torch.matmul(g, init(n_nets, width, width, gen).transpose(-2, -1)).clamp_min(0)
        h = h + gamma * g
        out.append(h.square().sum(-1) / x2)
    return torch.stack(out)


__all__ = ["sphere_area", "wallis", "k_printed", "k_constant", "LAWS", "rows",
           "normalize_rows", "proposed_gain", "weight_normalized", "layer_sq_ratio",
           "WNStats", "wn_relu_mlp", "prop3_sq_norm", "residual_sq_ratio"]
