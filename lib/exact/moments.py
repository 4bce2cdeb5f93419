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
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp
import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..sample.engine import trace as sample_trace
from ..sample.laws import BiasLaw, Initializer, Law, gaussian_bias, gaussian_variance, he, named
from ..sample.layers import Dense, Layer, ReLU, Residual, Serial, as_serial, mlp, relu_block, serial
from .engine import NoExactLaw
from .engine import trace as exact_trace
from .symbolic import _expr

#: The standard deviation of N(0, 1) truncated to [-2, 2]; Keras and JAX divide by it.
KERAS_TRUNCATION_STD = 0.87962566103423978


#: The lower bound of each parameter of the moment recursion: every one is a moment (>= 0),
#: the kurtosis mu_4 / mu_2^2 is >= 1 (Jensen).
_LOWER = {"m0": 0, "q0": 0, "kappa": 0, "mu4_tilde": 1, "nu2": 0, "nu4": 0}


def _exact(name: str, value):
    """A finite number (or SymPy expression) checked by name; ints become Fractions so that
    exact inputs give exact results (floats and SymPy pass)."""
    value = _expr(name, value, lo=_LOWER.get(name.partition("[")[0]))
    if isinstance(value, numbers.Integral) and not isinstance(value, sp.Basic):
        return Fraction(int(value))
    return value


def _seq(name: str, value, length: int) -> list:
    """A per-layer parameter: a scalar is repeated, a sequence must have ``length`` entries."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {value!r}")
    if isinstance(value, Sequence):
        if len(value) != length:
            raise ValueError(f"{name} must have one entry per layer ({length}), got {len(value)}")
        return [_exact(f"{name}[{i}]", x) for i, x in enumerate(value)]
    return [_exact(name, value)] * length


def _finite(values, names: str) -> None:
    """Refuse float results that overflowed (exact and SymPy values cannot)."""
    if any(isinstance(x, float) and not math.isfinite(x) for x in values):
        raise ValueError(f"{names}: the moments overflow float64; give exact values (int, "
                         "Fraction, SymPy) or smaller ones")


@dataclass(frozen=True)
class Moments:
    """Exact moments per layer j = 0..d: ``mean[j] = E[M_j]``, ``second[j] = E[M_j^2]``,
    ``fourth_power_sum[j] = E[Q_j] = E||act^(j)||_4^4``.

    Examples
    --------
    >>> Moments([1, 2], [1, 5], [1, 1]).variance
    [0, 1]
    """

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

    Examples
    --------
    >>> moment_recursion([1, 1], 1, 1).second
    [Fraction(1, 1), Fraction(6, 1)]
    """
    n = v.widths("widths", widths)
    if len(n) < 2:
        raise ValueError(f"widths must hold n_0 and at least one layer, got {widths!r}")
    d = len(n) - 1
    kap, k4 = _seq("kappa", kappa, d), _seq("mu4_tilde", mu4_tilde, d)
    b2, b4 = _seq("nu2", nu2, d), _seq("nu4", nu4, d)
    m0, q0 = _exact("m0", m0), _exact("q0", q0)
    try:
        mean, second, quart = _recursion(n, m0, q0, kap, k4, b2, b4)
    except OverflowError:   # Python's float ** overflows with an error, not with inf
        mean, second, quart = [math.inf], [], []
    _finite(mean + second + quart, "m0, q0, kappa, mu4_tilde, nu2, nu4")
    return Moments(mean, second, quart)


def _recursion(n: list[int], m0, q0, kap: list, k4: list, b2: list, b4: list) -> tuple:
    """(E M_j, E M_j^2, E Q_j), j = 0..d, for checked parameters (moment_recursion)."""
    d = len(n) - 1
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
    return mean, second, quart


def cross_moment(moments: Moments, j: int, k: int, *, kappa=1, nu2=0):
    """E[M_j M_k] for j <= k (layers counted from 0), from E[M_k | F_j] = kappa^{k-j} M_j + c.

    ``kappa`` and ``nu2`` must match those given to :func:`moment_recursion` (per layer or
    scalar); c = sum_{i=j+1}^{k} kappa_{i+1..k} nu2_i / 2.

    Examples
    --------
    >>> mom = moment_recursion([2, 2, 2], 1, 1)
    >>> cross_moment(mom, 1, 2) == mom.second[1]
    True
    """
    if not isinstance(moments, Moments):
        raise TypeError(f"moments must be a Moments (moment_recursion), got "
                        f"{type(moments).__name__}")
    d = len(moments.mean) - 1
    for name, i in (("j", j), ("k", k)):
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name} must be an int (a layer), got {type(i).__name__}")
    if not 0 <= j <= k <= d:
        raise ValueError(f"j and k must satisfy 0 <= j <= k <= {d}, got j={j!r}, k={k!r}")
    kap, b2 = _seq("kappa", kappa, d), _seq("nu2", nu2, d)
    gain, shift = Fraction(1), Fraction(0)
    for i in range(j + 1, k + 1):  # E[M_i | F_{i-1}] = kappa_i M_{i-1} + nu2_i / 2
        gain, shift = kap[i - 1] * gain, kap[i - 1] * shift + b2[i - 1] / 2
    out = gain * moments.second[j] + shift * moments.mean[j]
    _finite([out], "moments, kappa, nu2")
    return out


def expected_empirical_variance(widths: Sequence[int], m0, q0, *, kappa=1, mu4_tilde=3,
                                nu2=0, nu4=0):
    """E[Var^[M]] with Var^[M] = (1/d) sum_j M_j^2 - ((1/d) sum_j M_j)^2 over j = 1..d (sec. 3.3).

    Exact: every E[M_j M_k] follows from :func:`moment_recursion` and :func:`cross_moment`.

    Examples
    --------
    >>> expected_empirical_variance([2, 2], 1, 1)
    Fraction(0, 1)
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
    out = first - pairs * Fraction(1, d * d)
    _finite([out], "m0, q0, kappa, mu4_tilde, nu2, nu4")
    return out


def empirical_variance(m: torch.Tensor) -> torch.Tensor:
    """Var^[M] over layers 1..d of ``m`` with shape (d+1, ...) (row 0, the input, is dropped).

    Examples
    --------
    >>> empirical_variance(torch.tensor([[1.0], [1.0], [3.0]], dtype=torch.float64))
    tensor([1.], dtype=torch.float64)
    """
    m = v.tensor("m", m, ndim=tuple(range(2, 6)))
    if m.shape[0] < 2:
        raise ValueError(f"m must hold the input and at least one layer (d+1 >= 2 rows), got "
                         f"shape {tuple(m.shape)}")
    layers = m[1:]
    out = layers.square().mean(0) - layers.mean(0).square()
    if not bool(torch.isfinite(out).all()):
        raise ValueError("m is too large: its squares overflow the floating-point range "
                         "(rescale it)")
    return out


# --- samplers --------------------------------------------------------------------------------

def _bias_layers(nu2, depth: int) -> list[BiasLaw | None]:
    """One Gaussian bias law (or None for nu2 = 0) per layer; nu2 a scalar or a sequence."""
    values = _seq("nu2", nu2, depth)
    out = []
    for i, b in enumerate(values):
        if isinstance(b, bool) or not isinstance(b, (int, float, Fraction)) \
                or not math.isfinite(b) or b < 0:
            raise ValueError(f"nu2[{i}] must be a finite number >= 0, got {b!r}")
        out.append(gaussian_bias(float(b)) if b > 0 else None)
    return out


def relu_mlp_lengths(x: torch.Tensor, widths: Sequence[int], init: Initializer, *,
                     n_nets: int, gen: torch.Generator,
                     bias: BiasLaw | None = None) -> torch.Tensor:
    """M_j = ||act^(j)||^2 / n_j for j = 0..d of ``n_nets`` random nets with biases (eq. 3).

    The explicit engine on ``mlp(widths, init, bias=bias)`` (:mod:`eit.sample.layers`),
    read as ``Trace.mean_square``. Parameters: ``x`` ``(N, n_0)`` shared inputs,
    ``widths = [n_1, ..., n_d]``, ``bias`` a :func:`gaussian_bias` or None. Returns shape
    ``(d+1, n_nets, N)``.

    References
    ----------
    Hanin & Rolnick (2018), eq. (3) and Definition 1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> relu_mlp_lengths(torch.ones(2, 3, dtype=torch.float64), [4, 4], he(), n_nets=5,
    ...                  gen=generator(0), bias=gaussian_bias(0.1)).shape
    torch.Size([3, 5, 2])
    """
    widths = v.widths("widths", widths)
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    if bias is not None and not isinstance(bias, BiasLaw):
        raise TypeError(f"bias must be None or a gaussian_bias(variance), got "
                        f"{type(bias).__name__}")
    x = v.tensor("x", x, ndim=2)
    try:
        out = sample_trace(mlp(widths, init, bias=bias), x, n_nets=n_nets, gen=gen).mean_square
    except FloatingPointError as e:   # the engine's overflow check, for finite inputs
        raise ValueError(f"x, init, bias: {e}") from None
    if not bool(torch.isfinite(out).all()):
        raise ValueError("x, init, bias: the squared lengths overflow the floating-point range "
                         "(rescale x)")
    return out


def _he_chain(widths: list[int], kappa: float, biases: list) -> Serial:
    law = gaussian_variance(lambda fan_in, fan_out: 2 * kappa / fan_in)
    return Serial(tuple(serial(Dense(n, law, b), ReLU())
                        for n, b in zip(widths, biases, strict=True)))


#: Bytes of log-lengths one call of the exact engine may hold in
#: :func:`gaussian_bias_length_chain`; more networks are drawn in consecutive groups.
CHAIN_CHUNK_BYTES = 2**26


def gaussian_bias_length_chain(widths: Sequence[int], *, n_nets: int, gen: torch.Generator,
                               nu2=0.0, kappa: float = 1.0, m0: float = 1.0,
                               keep: Sequence[int] | None = None) -> torch.Tensor:
    """Exact sampler of (M_0, ..., M_d) with Gaussian weights *and* Gaussian biases, any width.

    Weights of layer j are N(0, 2 kappa / n_{j-1}), biases N(0, nu2_j) (``nu2=0``: no bias).
    Given act^(j-1) the pre-activations are i.i.d. N(0, s^2) with
    ``s^2 = 2 kappa M_{j-1} + nu2_j``, so ``M_j = s^2 chi^2_{K_j} / n_j`` with
    K_j ~ Binomial(n_j, 1/2): the norm chain of the exact engine
    (:func:`eit.exact.engine.trace`, ``method="norm"``), two draws per layer and net whatever
    the width, so a width of 10^7 costs what a width of 10 does.

    Parameters
    ----------
    widths : sequence of int
        ``[n_1, ..., n_d]``.
    n_nets : int
        The number of independent networks. Networks whose depths would hold more than
        :data:`CHAIN_CHUNK_BYTES` are drawn in consecutive groups (the same law; a depth of
        1,000 over 60,000 networks stays within memory).
    gen : torch.Generator
        The random generator.
    nu2 : float or sequence of float
        The bias variance, one value or one per layer (>= 0).
    kappa, m0 : float
        The weight variance factor and ``M_0``.
    keep : sequence of int, optional
        The depths to return, in this order (default: every depth 0..d).

    Returns
    -------
    torch.Tensor
        ``(d+1, n_nets)``, or ``(len(keep), n_nets)``: row i is ``M_{keep[i]}``.

    References
    ----------
    Hanin & Rolnick (2018), eqs. (3) and (10)-(11).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> gaussian_bias_length_chain([5, 5], n_nets=3, gen=generator(0), nu2=0.1).shape
    torch.Size([3, 3])
    >>> gaussian_bias_length_chain([5, 5], n_nets=3, gen=generator(0), keep=[2]).shape
    torch.Size([1, 3])
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    kappa, m0 = v.positive_float("kappa", kappa), v.positive_float("m0", m0)
    biases = _bias_layers(nu2, len(widths))
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    d = len(widths)
    if keep is not None and (isinstance(keep, (str, bytes)) or not isinstance(keep, Sequence)):
        raise TypeError(f"keep must be None or a sequence of depths, got {type(keep).__name__}")
    rows = list(range(d + 1)) if keep is None else list(keep)
    if not rows or any(not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= d
                       for k in rows):
        raise ValueError(f"keep must hold depths (int) in 0..{d}, got {keep!r}")
    # n_0 = 1 and x = sqrt(m0): M_0 = m0 and the first layer's variance is 2 kappa / 1
    x = torch.full((1, 1), math.sqrt(m0), dtype=DTYPE, device=device())
    net = _he_chain(widths, kappa, biases)
    group = max(1, CHAIN_CHUNK_BYTES // (8 * (d + 1)))
    out = torch.cat([
        exact_trace(net, x, n_nets=min(group, n_nets - start), gen=gen,
                    method="norm").mean_square[rows, :, 0]
        for start in range(0, n_nets, group)], dim=1)
    if not bool(torch.isfinite(out).all()):
        raise ValueError("kappa, m0, nu2: the lengths overflow float64 (M_j = inf); use "
                         "smaller ones or fewer layers")
    return out


def relu_residual_chain(x: torch.Tensor, etas: Sequence[float], *, n_nets: int,
                        gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact sampler of a ResNet stream whose modules are one ReLU layer with Gaussian weights.

    Module l maps the stream h (width n) to ``ReLU(W_l h)`` with W_l i.i.d. N(0, 2/n) (He
    normal, zero bias), and ``h_l = h_{l-1} + eta_l ReLU(W_l h_{l-1})``. Given h_{l-1},
    W_l h_{l-1} is N(0, (2/n) ||h_{l-1}||^2 I) whatever the direction of h_{l-1}: the exact
    engine (:func:`eit.exact.engine.trace`) samples it with n draws per module and network
    instead of a weight matrix of n^2.

    Parameters
    ----------
    x : torch.Tensor
        The input, shape ``(n,)`` (shared by all networks) or ``(n_nets, n)``; no zero rows.
    etas : sequence of float
        The scales ``[eta_1, ..., eta_L]`` (finite, non-negative).
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    tuple of torch.Tensor
        ``(log_len, unit_sum)``, both of shape ``(L+1, n_nets)``: ``log ||h_l||`` and the
        coordinate sum of the unit stream ``h_l / ||h_l||``, for l = 0..L.

    References
    ----------
    Hanin & Rolnick (2018), section 3.2, eq. (1).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> log_len, s = relu_residual_chain(torch.ones(4, dtype=torch.float64), [0.5] * 3,
    ...                                  n_nets=2, gen=generator(0))
    >>> tuple(log_len.shape)
    (4, 2)
    """
    x = v.tensor("x", x, ndim=(1, 2))
    n_nets = v.positive_int("n_nets", n_nets)
    etas = v.scales("etas", etas)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    if x.ndim == 2 and x.shape[0] != n_nets:
        raise ValueError(f"x must have shape (n,) or (n_nets={n_nets}, n), got {tuple(x.shape)}")
    if not bool((x.norm(dim=-1) > 0).all()):
        raise ValueError("x must have no zero rows")
    xs = x.reshape(1, -1) if x.ndim == 1 else x.unsqueeze(1)
    net = Serial(tuple(Residual(relu_block(he()), eta) for eta in etas))
    t = exact_trace(net, xs, n_nets=n_nets, gen=gen, method="conditional",
                    observe={"unit_sum": lambda h, log_r: h.sum(-1)})
    return t.log_h[..., 0], t.observed["unit_sum"][..., 0]


def named_initializers() -> dict[str, Law]:
    """The initializations of Figure 1, as used with ReLU nets (fan-in = input width).

    ``He normal truncated (PyTorch)``: N(0, 2/fan_in) truncated at two standard deviations
    without rescaling (``trunc_normal_(std=s, a=-2s, b=2s)``, and Keras in 2018 per the
    paper); ``(Keras, rescaled)``: the same with the stddev divided by
    :data:`KERAS_TRUNCATION_STD` first (current Keras/JAX
    ``VarianceScaling(distribution='truncated_normal')``). Every value is a
    :class:`eit.sample.laws.Law` (so :func:`moments_of` can read its variance and kurtosis).

    References
    ----------
    Hanin & Rolnick (2018), Figure 1.

    Examples
    --------
    >>> laws = named_initializers()
    >>> round(laws["He normal truncated (Keras, rescaled)"].variance(50, 50), 6)
    0.04
    """
    keras = 1.0 / KERAS_TRUNCATION_STD**2
    return {
        "He normal": named("he"),
        "He uniform": Law("uniform", lambda fan_in, fan_out: 2.0 / fan_in, "he_uniform"),
        "He normal truncated (PyTorch trunc_normal_)": named("he", distribution="truncated_normal"),
        "He normal truncated (Keras, rescaled)": Law(
            "truncated_normal", lambda fan_in, fan_out: 2.0 * keras / fan_in, "he_keras_truncated"),
        "LeCun normal": named("lecun"),
        "LeCun uniform": named("lecun", distribution="uniform"),
        "Glorot normal": named("glorot"),
        "Glorot uniform": named("glorot", distribution="uniform"),
        "2x He normal": gaussian_variance(lambda fan_in, fan_out: 4.0 / fan_in),
    }


def moments_of(net: Layer, n0: int, m0, q0) -> Moments:
    """The exact moments of :func:`moment_recursion` read off a layer description.

    ``net`` must be a chain of ``Dense(width, law, bias) -> ReLU`` elements with i.i.d.
    symmetric weight laws (:class:`eit.sample.laws.Law`: normal, uniform, truncated normal)
    and Gaussian or zero biases; kappa_j = Var(W) n_{j-1} / 2, mu4_tilde_j the law's kurtosis,
    nu2_j and nu4_j = 3 nu2_j^2 the bias moments. ``n0`` is the input width.

    Raises
    ------
    eit.exact.engine.NoExactLaw
        If an element is not of that form.

    References
    ----------
    Hanin & Rolnick (2018), appendix A, eqs. (10)-(12).

    Examples
    --------
    >>> from eit.sample.layers import mlp
    >>> [float(m) for m in moments_of(mlp([10, 10]), 10, 1, 1).mean]
    [1.0, 1.0, 1.0]
    """
    net = as_serial(net)
    n0 = v.positive_int("n0", n0)
    widths, kappa, kurt, nu2, nu4 = [n0], [], [], [], []
    for element in net.layers:
        leaves = element.leaves()
        if not (len(leaves) == 2 and isinstance(leaves[0], Dense) and isinstance(leaves[1], ReLU)):
            raise NoExactLaw(f"moments need Dense -> ReLU elements, got {element!r}")
        dense = leaves[0]
        law = dense.law
        if not (isinstance(law, Law) and law.distribution in ("normal", "uniform",
                                                              "truncated_normal")):
            raise NoExactLaw(f"Dense(width={dense.width}) with law {law!r}: moments need an "
                             "i.i.d. symmetric weight law")
        n_in = widths[-1]
        n_out = n_in if dense.width is None else dense.width
        kappa.append(law.variance(n_in, n_out) * n_in / 2)
        kurt.append(law.kurtosis)
        b2 = 0.0 if dense.bias is None else dense.bias.variance
        nu2.append(b2)
        nu4.append(3 * b2 * b2)
        widths.append(n_out)
    return moment_recursion(widths, m0, q0, kappa=kappa, mu4_tilde=kurt, nu2=nu2, nu4=nu4)


def expect_independent(expr, moments: dict):
    """E[expr] for a polynomial in independent random symbols, by expanding into monomials.

    ``moments`` maps each random SymPy symbol to a function ``k -> E[X^k]`` (for symmetric
    laws return 0 at odd k). Other symbols (e.g. fixed activations) are treated as constants.
    This is the index bookkeeping of appendix A done by the computer.

    Examples
    --------
    >>> import sympy as sp
    >>> z = sp.Symbol('z')
    >>> expect_independent(z**2 + 3, {z: lambda k: 1 if k == 2 else 0})
    4
    """
    if not isinstance(moments, dict) or not moments:
        raise ValueError("moments must be a non-empty dict {symbol: k -> E[X^k]}")
    vars_ = list(moments)
    for var in vars_:
        if not isinstance(var, sp.Symbol):
            raise TypeError(f"moments keys must be SymPy symbols, got {var!r}")
        if not callable(moments[var]):
            raise TypeError(f"moments[{var}] must be a function k -> E[X^k], got "
                            f"{type(moments[var]).__name__}")
    expr = _expr("expr", expr)
    poly = sp.Poly(sp.expand(sp.sympify(expr)), *vars_)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        term = coeff
        for var, k in zip(vars_, powers, strict=True):
            if k:
                term *= moments[var](k)
        total += term
    return sp.expand(total)


__all__ = ["KERAS_TRUNCATION_STD", "Moments", "cross_moment", "empirical_variance",
           "expect_independent", "expected_empirical_variance", "gaussian_bias",
           "CHAIN_CHUNK_BYTES", "gaussian_bias_length_chain", "moment_recursion", "moments_of",
           "named_initializers", "relu_mlp_lengths", "relu_residual_chain"]
