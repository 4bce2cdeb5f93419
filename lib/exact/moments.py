"""Failure modes FM1 and FM2 of Hanin & Rolnick (2018): exact moments and batched samplers.

Notation of the paper (section 3.1, eq. 3 and Definition 1): a fully connected ReLU net with
widths ``n_0, ..., n_d``; ``preact^(j) = b^(j) + W^(j) act^(j-1)``, ``act^(j) = ReLU(preact^(j))``;
weights of layer j i.i.d. from a symmetric law mu^(j) of variance ``2 kappa / n_{j-1}``
(kappa = 1 is Definition 1, general kappa is Corollary 1) and kurtosis
``mu4_tilde = mu_4 / mu_2^2``; biases i.i.d. from a symmetric law nu^(j) with moments
``nu_2, nu_4``. The normalized squared length is ``M_j = ||act^(j)||^2 / n_j`` and
``Q_j = ||act^(j)||_4^4`` (the fourth-power sum that enters E[M_j^2] when mu4_tilde != 3).

Given layer j-1, the coordinates of act^(j) are i.i.d. with (appendix A, eqs. 10 and 12)

* ``E[act^2]  = kappa M + nu_2 / 2``
* ``E[act^4]  = 6 kappa^2 M^2 + 2 kappa^2 (mu4_tilde - 3) Q / n_{j-1}^2``
  ``+ 6 kappa nu_2 M + nu_4 / 2``

so that ``(E M_j, E M_j^2, E Q_j)`` obey a closed *linear* recursion, computed exactly here.
The functions accept any numbers (floats, ``fractions.Fraction``, SymPy expressions), so a
chapter can feed them symbols and compare with its own SymPy derivation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, randn
from ..sample.laws import Initializer, gaussian, named, truncated_normal, uniform

#: A bias sampler: ``bias(n_nets, width, gen) -> (n_nets, width)``.
BiasSampler = Callable[[int, int, torch.Generator], torch.Tensor]

#: The standard deviation of N(0, 1) truncated to [-2, 2]; Keras and JAX divide by it.
KERAS_TRUNCATION_STD = 0.87962566103423978


def _exact(value):
    """Ints become Fractions so that exact inputs give exact results (floats, SymPy pass)."""
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    return Fraction(value) if isinstance(value, int) else value


def _seq(name: str, value, length: int) -> list:
    """A per-layer parameter: a scalar is repeated, a sequence must have ``length`` entries."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {value!r}")
    if isinstance(value, Sequence):
        if len(value) != length:
            raise ValueError(f"{name} must have one entry per layer ({length}), got {len(value)}")
        return [_exact(x) for x in value]
    return [_exact(value)] * length


@dataclass(frozen=True)
class Moments:
    """Exact moments per layer j = 0..d: ``mean[j] = E[M_j]``, ``second[j] = E[M_j^2]``,
    ``fourth_power_sum[j] = E[Q_j] = E||act^(j)||_4^4``."""

    mean: list
    second: list
    fourth_power_sum: list

    @property
    def variance(self) -> list:
        """Var[M_j] = E[M_j^2] - E[M_j]^2."""
        return [s - m * m for s, m in zip(self.second, self.mean, strict=True)]


def moment_recursion(widths: Sequence[int], m0, q0, *, kappa=1, mu4_tilde=3, nu2=0,
                     nu4=0) -> Moments:
    """Exact E[M_j], E[M_j^2], E[Q_j] for j = 0..d (appendix A, eqs. 10-12, any kurtosis).

    Args:
        widths: ``[n_0, n_1, ..., n_d]`` including the input dimension n_0.
        m0: ``M_0 = ||act^(0)||^2 / n_0`` of the fixed input.
        q0: ``Q_0 = ||act^(0)||_4^4`` of the fixed input.
        kappa: weight variance of layer j is ``2 kappa / n_{j-1}`` (scalar or one per layer).
        mu4_tilde: kurtosis mu_4/mu_2^2 of the weights (3 for Gaussian; scalar or per layer).
        nu2, nu4: second and fourth moments of the biases (scalar or per layer).
    """
    n = v.widths("widths", widths)
    if len(n) < 2:
        raise ValueError(f"widths must hold n_0 and at least one layer, got {widths!r}")
    d = len(n) - 1
    kap, k4 = _seq("kappa", kappa, d), _seq("mu4_tilde", mu4_tilde, d)
    b2, b4 = _seq("nu2", nu2, d), _seq("nu4", nu4, d)
    m0, q0 = _exact(m0), _exact(q0)
    mean, second, quart = [m0], [m0 * m0], [q0]
    for j in range(1, d + 1):
        nin, nout, k = n[j - 1], n[j], kap[j - 1]
        em, em2, eq = mean[-1], second[-1], quart[-1]
        e_act2 = k * em + b2[j - 1] / 2                              # E[act^2] (linear in M)
        e_act2_sq = k * k * em2 + k * b2[j - 1] * em + b2[j - 1] ** 2 / 4   # E[(E[act^2|F])^2]
        e_act4 = (6 * k * k * em2 + 2 * k * k * (k4[j - 1] - 3) * eq / nin**2
                  + 6 * k * b2[j - 1] * em + b4[j - 1] / 2)
        mean.append(e_act2)
        second.append(e_act4 / nout + e_act2_sq * (nout - 1) / nout)
        quart.append(nout * e_act4)
    return Moments(mean, second, quart)


def cross_moment(moments: Moments, j: int, k: int, *, kappa=1, nu2=0):
    """E[M_j M_k] for j <= k (layers counted from 0), from E[M_k | F_j] = kappa^{k-j} M_j + c.

    ``kappa`` and ``nu2`` must match those given to :func:`moment_recursion` (per layer or
    scalar); c = sum_{i=j+1}^{k} kappa_{i+1..k} nu2_i / 2.
    """
    d = len(moments.mean) - 1
    if not (isinstance(j, int) and isinstance(k, int) and 0 <= j <= k <= d):
        raise ValueError(f"j and k must satisfy 0 <= j <= k <= {d}, got j={j!r}, k={k!r}")
    kap, b2 = _seq("kappa", kappa, d), _seq("nu2", nu2, d)
    gain, shift = Fraction(1), Fraction(0)
    for i in range(j + 1, k + 1):  # E[M_i | F_{i-1}] = kappa_i M_{i-1} + nu2_i / 2
        gain, shift = kap[i - 1] * gain, kap[i - 1] * shift + b2[i - 1] / 2
    return gain * moments.second[j] + shift * moments.mean[j]


def expected_empirical_variance(widths: Sequence[int], m0, q0, *, kappa=1, mu4_tilde=3,
                                nu2=0, nu4=0):
    """E[Var^[M]] with Var^[M] = (1/d) sum_j M_j^2 - ((1/d) sum_j M_j)^2 over j = 1..d (sec. 3.3).

    Exact: every E[M_j M_k] follows from :func:`moment_recursion` and :func:`cross_moment`.
    """
    mom = moment_recursion(widths, m0, q0, kappa=kappa, mu4_tilde=mu4_tilde, nu2=nu2, nu4=nu4)
    d = len(widths) - 1
    kap, b2 = _seq("kappa", kappa, d), _seq("nu2", nu2, d)
    first = sum(mom.second[1:]) * Fraction(1, d)
    pairs = 0
    for j in range(1, d + 1):  # E[M_j M_k] = gain E[M_j^2] + shift E[M_j], as in cross_moment
        gain, shift = Fraction(1), Fraction(0)
        gains, shifts = Fraction(0), Fraction(0)
        for i in range(j + 1, d + 1):
            gain, shift = kap[i - 1] * gain, kap[i - 1] * shift + b2[i - 1] / 2
            gains, shifts = gains + gain, shifts + shift
        pairs = pairs + mom.second[j] * (1 + 2 * gains) + 2 * shifts * mom.mean[j]
    return first - pairs * Fraction(1, d * d)


def empirical_variance(m: torch.Tensor) -> torch.Tensor:
    """Var^[M] over layers 1..d of ``m`` with shape (d+1, ...) (row 0, the input, is dropped)."""
    m = v.tensor("m", m, ndim=tuple(range(2, 6)))
    layers = m[1:]
    return layers.square().mean(0) - layers.mean(0).square()


# --- samplers --------------------------------------------------------------------------------

def gaussian_bias(variance: float) -> BiasSampler:
    """Biases i.i.d. N(0, variance)."""
    std = math.sqrt(v.positive_float("variance", variance))

    def bias(n_nets: int, width: int, gen: torch.Generator) -> torch.Tensor:
        return std * randn(n_nets, width, gen=gen)

    return bias


def relu_mlp_lengths(x: torch.Tensor, widths: Sequence[int], init: Initializer, *,
                     n_nets: int, gen: torch.Generator,
                     bias: BiasSampler | None = None) -> torch.Tensor:
    """M_j = ||act^(j)||^2 / n_j for j = 0..d of ``n_nets`` random nets with biases (eq. 3).

    Unlike :func:`eit.sample.mlp.relu_mlp` (zero biases, log-norms) this keeps raw lengths,
    which is what a net with biases needs (it is not positively homogeneous); keep depths
    moderate. ``x``: ``(N, n_0)`` shared inputs. Returns shape ``(d+1, n_nets, N)``.
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    if bias is not None and not callable(bias):
        raise TypeError(f"bias must be None or callable, got {type(bias).__name__}")
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    h = x.unsqueeze(0).expand(n_nets, -1, -1)
    out = [h.square().sum(-1) / h.shape[-1]]
    fan_in = h.shape[-1]
    for width in widths:
        a = torch.matmul(h, init(n_nets, width, fan_in, gen).transpose(-2, -1))
        if bias is not None:
            a = a + bias(n_nets, width, gen).unsqueeze(1)
        h = a.clamp_min(0)
        out.append(h.square().sum(-1) / width)
        fan_in = width
    return torch.stack(out)


def gaussian_length_chain(widths: Sequence[int], *, n_nets: int, gen: torch.Generator,
                          kappa: float = 1.0, m0: float = 1.0) -> torch.Tensor:
    """Exact sampler of (M_0, ..., M_d) for Gaussian weights of variance 2 kappa/n_{j-1}, no bias.

    Given act^(j-1) the pre-activations are i.i.d. N(0, 2 kappa M_{j-1}), so
    ``M_j = M_{j-1} * (2 kappa / n_j) * sum_i ReLU(Z_i)^2`` with fresh standard normals Z_i:
    no weight matrix is materialized. ``widths = [n_1, ..., n_d]``. Returns (d+1, n_nets).
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    kappa, m0 = v.positive_float("kappa", kappa), v.positive_float("m0", m0)
    m = torch.full((n_nets,), m0, dtype=DTYPE, device=device())
    out = [m]
    for width in widths:
        z = randn(n_nets, width, gen=gen).clamp_min_(0)
        m = m * (2 * kappa / width) * z.square().sum(-1)
        out.append(m)
    return torch.stack(out)


def gaussian_bias_length_chain(widths: Sequence[int], *, n_nets: int, gen: torch.Generator,
                               nu2=0.0, kappa: float = 1.0, m0: float = 1.0) -> torch.Tensor:
    """Exact sampler of (M_0, ..., M_d) with Gaussian weights *and* Gaussian biases, any width.

    Weights of layer j are N(0, 2 kappa / n_{j-1}), biases N(0, nu2_j). Given act^(j-1) the
    pre-activations are i.i.d. N(0, s^2) with ``s^2 = 2 kappa M_{j-1} + nu2_j``, and
    ``sum_i ReLU(Z_i)^2`` over n_j standard normals is a chi-square with K ~ Binomial(n_j, 1/2)
    degrees of freedom (the units that are on), i.e. ``2 Gamma(K/2)``. Hence
    ``M_j = s^2 * chi2_K / n_j``: two draws per layer and net, whatever the width.
    ``widths = [n_1, ..., n_d]``; ``nu2`` is a scalar or one value >= 0 per layer.
    Returns shape (d+1, n_nets).
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    kappa, m0 = v.positive_float("kappa", kappa), v.positive_float("m0", m0)
    b2 = _seq("nu2", nu2, len(widths))
    for i, b in enumerate(b2):
        if isinstance(b, bool) or not isinstance(b, (int, float, Fraction)) \
                or not math.isfinite(b) or b < 0:
            raise ValueError(f"nu2[{i}] must be a finite number >= 0, got {b!r}")
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    m = torch.full((n_nets,), m0, dtype=DTYPE, device=device())
    out = [m]
    for width, b in zip(widths, b2, strict=True):
        count = torch.full((n_nets,), float(width), dtype=DTYPE, device=gen.device)
        on = torch.binomial(count, torch.full_like(count, 0.5), generator=gen)
        chi2 = 2 * torch._standard_gamma(on / 2, generator=gen) * (on > 0)
        m = (2 * kappa * m + float(b)) * chi2.to(device()) / width
        out.append(m)
    return torch.stack(out)


def relu_residual_chain(x: torch.Tensor, etas: Sequence[float], *, n_nets: int,
                        gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact sampler of a ResNet stream whose modules are one ReLU layer with Gaussian weights.

    Module l maps the stream h (width n) to ``ReLU(W_l h)`` with W_l i.i.d. N(0, 2/n) (He
    normal, zero bias), and ``h_l = h_{l-1} + eta_l ReLU(W_l h_{l-1})``. Given h_{l-1}, W_l h_{l-1}
    is N(0, (2/n) ||h_{l-1}||^2 I) whatever the direction of h_{l-1}, hence exactly
    ``h_l = h_{l-1} + eta_l sqrt(2/n) ||h_{l-1}|| ReLU(Z_l)`` with fresh standard normals Z_l:
    n draws per module and network instead of a weight matrix of n^2.

    Args:
        x: the input, shape ``(n,)`` (shared by all networks) or ``(n_nets, n)``; no zero rows.
        etas: the scales ``[eta_1, ..., eta_L]`` (non-negative).
        n_nets: number of independent networks.
        gen: random generator (see :func:`eit.core.device.generator`).
    Returns:
        ``(log_len, unit_sum)``, both of shape ``(L+1, n_nets)``: ``log ||h_l||`` and the
        coordinate sum of the unit stream ``h_l / ||h_l||``, for l = 0..L (as
        :func:`eit.sample.resnets.residual_log_lengths` with ``observe=lambda h: h.sum(-1)``).
    """
    x = v.tensor("x", x, ndim=(1, 2))
    n_nets = v.positive_int("n_nets", n_nets)
    if isinstance(etas, (str, bytes)) or not isinstance(etas, Sequence) or len(etas) == 0:
        raise ValueError(f"etas must be a non-empty sequence of numbers, got {etas!r}")
    for i, eta in enumerate(etas):
        if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not eta >= 0 \
                or not math.isfinite(eta):
            raise ValueError(f"etas[{i}] must be a finite non-negative number, got {eta!r}")
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    if x.ndim == 2 and x.shape[0] != n_nets:
        raise ValueError(f"x must have shape (n,) or (n_nets={n_nets}, n), got {tuple(x.shape)}")
    h = x.to(device=device(), dtype=DTYPE).expand(n_nets, -1)
    width = h.shape[-1]
    r = h.norm(dim=-1)
    if not bool((r > 0).all()):
        raise ValueError("x must have no zero rows")
    h = h / r.unsqueeze(-1)
    log_len = torch.log(r)
    logs, sums = [log_len], [h.sum(-1)]
    scale = math.sqrt(2.0 / width)
    for eta in etas:                       # h is the unit stream: ||h|| = 1 before each module
        h = h + (eta * scale) * randn(n_nets, width, gen=gen).clamp_min_(0)
        r = h.norm(dim=-1)
        h = h / r.unsqueeze(-1)
        log_len = log_len + torch.log(r)
        logs.append(log_len)
        sums.append(h.sum(-1))
    return torch.stack(logs), torch.stack(sums)


def named_initializers() -> dict[str, Initializer]:
    """The initializations of Figure 1, as used with ReLU nets (fan-in = input width).

    ``he_truncated_pytorch``: N(0, 2/fan_in) truncated at two standard deviations without
    rescaling (``trunc_normal_(std=s, a=-2s, b=2s)``, and Keras in 2018 per the paper);
    ``he_truncated_keras``: the same with the stddev divided by :data:`KERAS_TRUNCATION_STD`
    first (current Keras/JAX ``VarianceScaling(distribution='truncated_normal')``).
    """
    def keras_truncated(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator):
        std = math.sqrt(2.0 / fan_in) / KERAS_TRUNCATION_STD
        return truncated_normal(n_nets, fan_out, fan_in, std, gen=gen)

    def twice_he(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator):
        return gaussian(n_nets, fan_out, fan_in, 4.0 / fan_in, gen=gen)

    def he_uniform(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator):
        return uniform(n_nets, fan_out, fan_in, 2.0 / fan_in, gen=gen)

    return {
        "He normal": named("he"),
        "He uniform": he_uniform,
        "He normal truncated (PyTorch trunc_normal_)": named("he", distribution="truncated_normal"),
        "He normal truncated (Keras, rescaled)": keras_truncated,
        "LeCun normal": named("lecun"),
        "LeCun uniform": named("lecun", distribution="uniform"),
        "Glorot normal": named("glorot"),
        "Glorot uniform": named("glorot", distribution="uniform"),
        "2x He normal": twice_he,
    }


def expect_independent(expr, moments: dict):
    """E[expr] for a polynomial in independent random symbols, by expanding into monomials.

    ``moments`` maps each random SymPy symbol to a function ``k -> E[X^k]`` (for symmetric
    laws return 0 at odd k). Other symbols (e.g. fixed activations) are treated as constants.
    This is the index bookkeeping of appendix A done by the computer.
    """
    import sympy as sp

    if not isinstance(moments, dict) or not moments:
        raise ValueError("moments must be a non-empty dict {symbol: k -> E[X^k]}")
    vars_ = list(moments)
    for var in vars_:
        if not isinstance(var, sp.Symbol):
            raise TypeError(f"moments keys must be SymPy symbols, got {var!r}")
    poly = sp.Poly(sp.expand(sp.sympify(expr)), *vars_)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        term = coeff
        for var, k in zip(vars_, powers, strict=True):
            if k:
                term *= moments[var](k)
        total += term
    return sp.expand(total)
