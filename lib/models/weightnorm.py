"""Weight-normalized ReLU layers (Arpit & Bengio 2019, section 4) and the constant K_n.

A weight-normalized layer is ``a = k * W_hat h`` with ``W_hat_i = W_i / ||W_i||`` (eqs. 18-19);
the paper proposes the gain ``k = sqrt(2 fan_in / fan_out)`` (Corollary 2, eq. 30), and
traditional weight normalization (Salimans & Kingma 2016) uses ``k = 1``.

Exact part (SymPy): :func:`sphere_area` in both conventions, :func:`wallis`, the constant
K_n as printed in the paper (:func:`k_printed`, main text eq. 20 or appendix eq. 171) and as
derived (:func:`k_constant`, the Beta integral of the squared first coordinate of a uniform
unit vector).

Sampling part: the row laws, :func:`normalize_rows`, :func:`proposed_gain` and the one
:func:`weight_normalized` law live in :mod:`eit.sample.laws` (re-exported here). This module
keeps the paper's own constructions: :func:`layer_sq_ratio` (one layer, Theorem 4 and
Proposition 2), :func:`prop3_sq_norm` (Proposition 3), and, over the engine
(:func:`eit.sample.engine.trace`), :func:`wn_network` / :func:`wn_relu_mlp` (eq. 18, with the
gradients of the un-normalized weights, eqs. 24-28) and :func:`log_grad_ratio` (Figure 4's
ratio). Appendix A's residual networks are :func:`eit.models.scaled_residual.scaled_resnet`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
import sympy as sp
import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import SAFE_EXPONENT, rescaled
from ..sample.engine import trace
from ..sample.laws import (
    LAWS,
    RowLaw,
    normalize_rows,
    proposed_gain,
    rows,
    standard_normal,
    standard_uniform,
    weight_normalized,
)
from ..sample.layers import ReLU, Serial, WeightNorm, serial
from ..sample.traces import Trace

Convention = Literal["ambient", "intrinsic"]
Source = Literal["main", "appendix"]

# ----------------------------------------------------------------------------- exact part


def sphere_area(q, convention: Convention = "ambient") -> sp.Expr:
    """Surface area S_q of a unit sphere, as a SymPy expression.

    ``q`` is an int (>= 1 ambient, >= 0 intrinsic, at most ``EXACT_LIMIT`` = 10^4: the exact
    value holds a factorial of q/2) or a real SymPy expression (a symbol for the formula).

    ``'ambient'``: the sphere in R^q, S_q = 2 pi^(q/2) / Gamma(q/2) (so S_2 = 2 pi, S_3 = 4 pi).
    ``'intrinsic'``: the q-dimensional sphere S^q in R^(q+1), i.e. the ambient S_(q+1)
    (so S_1 = 2 pi, S_2 = 4 pi, and S_0 = 2 counts the two points of S^0).

    Examples
    --------
    >>> sphere_area(3)
    4*pi
    """
    if convention not in ("ambient", "intrinsic"):
        raise ValueError(f"convention must be 'ambient' or 'intrinsic', got {convention!r}")
    q = _dimension("q", q, 1 if convention == "ambient" else 0)
    d = q if convention == "ambient" else q + 1
    return 2 * sp.pi ** (d / 2) / sp.gamma(d / 2)


def wallis(q) -> sp.Expr:
    """W_q = int_0^(pi/2) sin^q(theta) d theta = sqrt(pi) Gamma((q+1)/2) / (2 Gamma(q/2 + 1)).

    The closed form of the Beta integral; it satisfies W_q = (q-1)/q W_(q-2), eq. (183).
    ``q`` is an int in [0, 10^4] (``EXACT_LIMIT``) or a real SymPy expression.

    Examples
    --------
    >>> wallis(2)
    pi/4
    """
    q = _dimension("q", q, 0)
    return sp.sqrt(sp.pi) * sp.gamma((q + 1) / 2) / (2 * sp.gamma(q / 2 + 1))


#: The largest integer dimension of the exact formulas: their values are formed exactly (Gamma
#: of an integer is a factorial, K_n as printed a product of n/2 fractions), which takes seconds
#: at 10^4 and grows without bound; a SymPy symbol gives the general formula instead.
EXACT_LIMIT = 10_000


def _int_n(name: str, n, lo: int = 1, *, limit: bool = True) -> int:
    if isinstance(n, sp.Integer):
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or n < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {n!r}")
    if n > EXACT_LIMIT and limit:
        raise ValueError(f"{name} = {n} is too large for an exact value (at most "
                         f"{EXACT_LIMIT}); pass a SymPy symbol for the general formula")
    return n


def _dimension(name: str, q, lo: int) -> sp.Expr:
    """An int dimension >= ``lo`` (at most ``EXACT_LIMIT``), or a real SymPy expression."""
    if isinstance(q, sp.Basic) and not isinstance(q, sp.Integer):
        if not isinstance(q, sp.Expr) or q.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or \
                q.is_real is False:
            raise ValueError(f"{name} must be an int or a real SymPy expression, got {q!r}")
        return q
    return sp.Integer(_int_n(name, q, lo))


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
    ``n`` is at most ``EXACT_LIMIT`` = 10^4 (the products have n/2 factors).

    Examples
    --------
    >>> k_printed(2)
    1
    """
    n = _int_n("n", n)
    if source not in ("main", "appendix"):
        raise ValueError(f"source must be 'main' or 'appendix', got {source!r}")
    if convention == "ambient" and n == 1:
        raise ValueError("n must be >= 2 with the ambient convention (S_0 of R^0 is undefined)")
    ratio = 2 * sphere_area(n - 1, convention) / sphere_area(n, convention)
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
    ``n`` may be an int >= 1 or a positive SymPy symbol (then n >= 2 is assumed); for an int
    n >= 2 the closed form derived for the symbol is evaluated at n, so every n takes the same
    time.

    Examples
    --------
    >>> k_constant(5)
    1
    """
    if isinstance(n, sp.Symbol):
        if not n.is_positive:
            raise ValueError("n must be a positive symbol")
        return _k_derived(n)
    n = _int_n("n", n, limit=False)
    if n == 1:
        return sp.Integer(1)  # t = +-1 with probability 1/2 each: 2 * (1/2) * 1
    # the closed form for a positive symbol (n >= 2) at n: Gamma(n/2) is never formed, so any
    # n takes the same time
    symbol = sp.Symbol("n", positive=True)
    return _k_derived(symbol).subs(symbol, n)


def _k_derived(n: sp.Expr) -> sp.Expr:
    """n B(3/2, (n-1)/2) / B(1/2, (n-1)/2), simplified (:func:`k_constant`)."""
    a = sp.Rational(1, 2)
    b = (n - 1) / 2
    second_moment = sp.beta(a + 1, b) / sp.beta(a, b)
    return sp.simplify(sp.gammasimp(sp.expand_func(n * second_moment)))


# ---------------------------------------------------------------------------- sampling part

#: The row laws of Theorem 4 and its controls (:data:`eit.sample.laws.LAWS`).
Law = RowLaw


def layer_sq_ratio(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
                   law: Law = "gaussian", mask: str = "relu", gain: float | None = None,
                   chunk: int = 2**22) -> torch.Tensor:
    """||v||^2 / ||u||^2 for ``n_nets`` independent weight-normalized layers applied to u.

    ``mask='relu'``: v = ReLU(k R_hat u) (Theorem 4). ``mask='bernoulli'``: v = k (R_hat u) * z
    with z_i ~ Bernoulli(1/2) independent of R (Proposition 2). R has ``m`` i.i.d. rows of
    ``law`` in R^n, n = len(u); the default gain is k = sqrt(2n/m). The expectation is K_n.
    At most ``chunk`` row entries are held at once (networks and rows are split).

    Returns
    -------
    torch.Tensor
        ``(n_nets,)``.

    References
    ----------
    Arpit & Bengio (2019), Theorem 4 and Proposition 2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> layer_sq_ratio(torch.ones(3, dtype=torch.float64), 8, n_nets=4, gen=generator(0)).shape
    torch.Size([4])
    """
    u = _unit_scale(v.nonzero_vector("u", u).to(device=device(), dtype=DTYPE))
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    chunk = v.positive_int("chunk", chunk)
    if mask not in ("relu", "bernoulli"):
        raise ValueError(f"mask must be 'relu' or 'bernoulli', got {mask!r}")
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    n = u.numel()
    k = proposed_gain(n, m) if gain is None else v.positive_float("gain", gain)
    units = m if law == "orthogonal" else max(1, min(m, chunk // n))
    nets = max(1, min(n_nets, chunk // (units * n)))
    v.memory("chunk", 8.0 * 3 * nets * units * n)
    total = torch.zeros(n_nets, dtype=DTYPE, device=device())
    for start in range(0, n_nets, nets):
        b = min(nets, n_nets - start)
        for first in range(0, m, units):
            w = min(units, m - first)
            a = k * torch.matmul(normalize_rows(rows(b, w, n, gen=gen, law=law)), u)
            if mask == "relu":
                a = a.clamp_min(0)
            else:
                a = a * (standard_uniform(b, w, gen=gen) < 0.5)
            total[start:start + b] += a.square().sum(-1)
    out = total / u.square().sum()
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"gain = {k!r} is too large: the ratio k^2 ||R_hat u||^2 / ||u||^2 "
                         "overflows float64")
    return out


def _square(c: float) -> float:
    """``c**2``, +inf where it overflows (Python raises there)."""
    try:
        return c**2
    except OverflowError:
        return math.inf


def _unit_scale(u: torch.Tensor) -> torch.Tensor:
    """``u`` times an exact power of two where its norm would leave float64's range (the
    ratios ||f(u)||^2 / ||u||^2 of a homogeneous layer do not depend on the scale of u)."""
    return rescaled(u[None], 1)[0][0]


def wn_network(widths: Sequence[int], *, gain: float | Callable[[int, int], float] | None = None,
               law: Law = "gaussian", row_norm: float | None = 1.0) -> Serial:
    """The weight-normalized ReLU network of eq. (18) as a layer description.

    One element ``serial(WeightNorm(n_l, rows=law, gain=gain, row_norm=row_norm), ReLU())``
    per layer; ``gain`` None is the proposed sqrt(2 fan_in / fan_out) (eq. 30).

    Examples
    --------
    >>> wn_network([4, 4]).widths(2)
    (2, 4, 4)
    """
    widths = v.widths("widths", widths)
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    return Serial(tuple(serial(WeightNorm(n, law, gain, 2.0, row_norm), ReLU()) for n in widths))


def wn_relu_mlp(x: torch.Tensor, widths, *, n_nets: int, gen: torch.Generator,
                gain: float | Callable[[int, int], float] = proposed_gain,
                law: Law = "gaussian", row_norm: float | None = 1.0,
                delta="random") -> Trace:
    """Forward and backward pass of ``n_nets`` weight-normalized ReLU networks, eq. (18).

    Layer l computes a^l = k_l W_hat^l h^{l-1}, h^l = ReLU(a^l), with W^l rows i.i.d. from
    ``law``, rescaled to norm ``row_norm`` (the c of Proposition 3; None keeps the law's
    norms). The explicit engine on :func:`wn_network`.

    Parameters
    ----------
    x : torch.Tensor
        ``(N, n_0)`` or ``(n_nets, N, n_0)``.
    widths : sequence of int
        ``[n_1, ..., n_L]``.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    gain : float or callable
        A number (1.0: traditional weight normalization) or a rule gain(fan_in, fan_out)
        (default :func:`proposed_gain`).
    law : str
        The row law (:data:`LAWS`).
    row_norm : float or None
        The norm c of the un-normalized rows.
    delta : 'random' or callable
        ``'random'``: dl/dh^L standard Gaussian, independent of the network (then masked by the
        last ReLU); or a loss head ``loss_grad(h^L)`` returning dl/dh^L (e.g.
        :class:`eit.sample.heads.SoftmaxCrossEntropy`).

    Returns
    -------
    Trace
        ``log_h`` (L+1, n_nets, N); ``log_delta`` = log ||dl/da^l||, ``log_grad_w`` =
        log ||dl/dW^l||_F for the *un-normalized* weights (eqs. 27-28: ||dl/dW_i|| =
        k |delta_i| ||(I - W_hat_i W_hat_i^T) h|| / ||W_i||), ``log_grad_w_hat`` =
        log ||dl/dW_hat^l||_F (eq. 24), all per sample, (L, n_nets, N); ``meta['gains']``.

    References
    ----------
    Arpit & Bengio (2019), eqs. (18)-(28), Theorems 4-5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> s = wn_relu_mlp(torch.ones(3, 8, dtype=torch.float64), [16] * 3, n_nets=2,
    ...                 gen=generator(0))
    >>> tuple(log_grad_ratio(s, "w").shape)
    (3, 2, 3)
    """
    widths = v.widths("widths", widths)
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
    # row_norm only scales ||dl/dW|| by 1/c (eq. 28); the engine forms c^2, so a c whose
    # square leaves float64 is applied afterwards, in log space (exact)
    shift = row_norm is not None and not 2.0**-SAFE_EXPONENT <= row_norm <= 2.0**SAFE_EXPONENT
    net = wn_network(widths, gain=rule, law=law, row_norm=1.0 if shift else row_norm)
    t = trace(net, x, n_nets=n_nets, gen=gen, backward=delta)
    if shift:
        t = replace(t, stats={**t.stats, "log_grad_w": t.stats["log_grad_w"] - math.log(row_norm)})
    fans = t.widths
    gains = tuple(float(rule(a, b)) for a, b in zip(fans[:-1], fans[1:], strict=True))
    return t.with_meta(gains=gains)


def log_grad_ratio(stats: Trace, which: str = "w") -> torch.Tensor:
    """The ratio of Figure 4: log of ||dl/dW^l|| (``'w'``) or ||dl/dW_hat^l|| (``'w_hat'``)
    over sqrt(2 n_{l-1}/n_l) ||delta|| ||x|| (eqs. 22 and 26), shape (L, n_nets, N).

    ``stats`` is a :func:`wn_relu_mlp` trace; delta = dl/da^L.

    Raises
    ------
    eit.sample.traces.UndefinedRatio
        Where ||delta|| or ||x|| is 0.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> s = wn_relu_mlp(torch.ones(1, 4, dtype=torch.float64), [4], n_nets=1,
    ...                 gen=generator(0))
    >>> log_grad_ratio(s, "w_hat").shape
    torch.Size([1, 1, 1])
    """
    if which not in ("w", "w_hat"):
        raise ValueError(f"which must be 'w' or 'w_hat', got {which!r}")
    if not isinstance(stats, Trace):
        raise TypeError(f"stats must be a Trace of wn_relu_mlp, got {type(stats).__name__}")
    num = stats.stat("log_grad_w" if which == "w" else "log_grad_w_hat")
    fans = stats.widths
    ref = torch.tensor([0.5 * math.log(2 * a / b) for a, b in zip(fans[:-1], fans[1:])],
                       dtype=num.dtype, device=num.device).view(-1, 1, 1)
    from ..sample.traces import _ratio

    return _ratio(num - ref, stats.stat("log_delta")[-1] + stats.log_h[0], "log_grad_ratio")


def prop3_sq_norm(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
                  law: Law = "gaussian", row_norm: float | None = 1.0,
                  z: str = "bernoulli") -> torch.Tensor:
    """||M||_F^2 / ||u||^2 of Proposition 3 for ``n_nets`` draws.

    M = sqrt(2n/m) diag(z) H with rows H_i = (I - R_hat_i R_hat_i^T) u / ||R_i||, R_i i.i.d.
    from ``law`` rescaled to norm ``row_norm`` (c; None keeps the law's norms), z independent
    of R: ``'bernoulli'`` (Bernoulli(1/2)) or ``'gaussian'`` (standard normal).

    References
    ----------
    Arpit & Bengio (2019), Proposition 3.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> prop3_sq_norm(torch.ones(3, dtype=torch.float64), 5, n_nets=2, gen=generator(0)).shape
    torch.Size([2])
    """
    u = _unit_scale(v.nonzero_vector("u", u).to(device=device(), dtype=DTYPE))
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
    c2 = norms.square() if row_norm is None else _square(row_norm)
    if z == "bernoulli":
        zz = (standard_uniform(n_nets, m, gen=gen) < 0.5).to(DTYPE)
    else:
        zz = standard_normal(n_nets, m, gen=gen)
    out = (2 * n / m) * (zz.square() * perp / c2).sum(-1) / u.square().sum()
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"row_norm = {row_norm!r} is too small: ||M||^2 / ||u||^2, of order "
                         "1/row_norm^2, overflows float64")
    return out


__all__ = ["LAWS", "k_constant", "k_printed", "layer_sq_ratio", "log_grad_ratio", "normalize_rows",
           "prop3_sq_norm", "proposed_gain", "rows", "sphere_area", "wallis", "weight_normalized",
           "wn_network", "wn_relu_mlp", "prop3_expectation", "traditional_sq_ratios"]


def prop3_expectation(n: int, m: int, *, z: str = "bernoulli",
                      row_norm: float | None = 1.0) -> float:
    """E||M||_F^2 / ||u||^2 of Proposition 3 with K_n = 1, the law of :func:`prop3_sq_norm`.

    ``2n/(m c^2) (1 - K_n/n) E||z||^2`` with ``K_n = 1`` (:func:`k_constant`),
    ``E||z||^2 = m/2`` (Bernoulli(1/2) z) or ``m`` (standard normal z). With
    ``row_norm=None`` (raw Gaussian rows, not rescaled) ``1/c^2`` becomes
    ``E||R_i||^-2 = 1/(n - 2)`` (the inverse chi-squared mean), finite for n > 2.

    References
    ----------
    Arpit & Bengio (2019), Proposition 3.

    Examples
    --------
    >>> prop3_expectation(2, 50)
    1.0
    >>> round(prop3_expectation(10, 50, z="gaussian", row_norm=None), 12)
    2.25
    """
    n, m = v.positive_int("n", n), v.positive_int("m", m)
    if z not in ("bernoulli", "gaussian"):
        raise ValueError(f"z must be 'bernoulli' or 'gaussian', got {z!r}")
    if row_norm is None and n <= 2:
        raise ValueError(f"n must be > 2 for raw rows (E||R_i||^-2 = 1/(n - 2)), got {n}")
    if row_norm is None:
        inv_c2 = 1 / (n - 2)
    else:
        c2 = _square(v.positive_float("row_norm", row_norm))
        if c2 == 0 or 1 / c2 == math.inf:
            raise ValueError(f"row_norm = {row_norm!r} is too small: 1/row_norm^2 overflows "
                             "float64")
        inv_c2 = 1 / c2                                       # 0 where 1/c^2 underflows
    e_z2 = m / 2 if z == "bernoulli" else m
    return 2 * n / m * inv_c2 * (1 - 1 / n) * e_z2


def traditional_sq_ratios(in_dim: int, width: int, depth: int) -> np.ndarray:
    """Exact ``E||h^l||^2/||x||^2``, l = 1..depth, with traditional weight normalization.

    With the gain k = 1 (Salimans & Kingma's weight normalization) and isotropic rows, a
    ReLU layer ``n_(l-1) -> n_l`` multiplies ``E||h||^2`` by ``n_l k^2 / (2 n_(l-1))``: the
    first layer ``in_dim -> width`` by ``width / (2 in_dim)``, every square layer by 1/2.

    References
    ----------
    Arpit & Bengio (2019), section 5 and Figure 3 (traditional weight normalization).

    Examples
    --------
    >>> traditional_sq_ratios(500, 100, 3).tolist()
    [0.1, 0.05, 0.025]
    """
    in_dim, width = v.positive_int("in_dim", in_dim), v.positive_int("width", width)
    depth = v.positive_int("depth", depth)
    return width / (2 * in_dim) * 0.5 ** (np.arange(1, depth + 1) - 1)
