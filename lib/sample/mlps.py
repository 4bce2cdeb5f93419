"""Random fully connected ReLU networks (Arpit & Bengio 2019, eq. 1): thin functions over the
engine, and the one-layer Monte Carlo of Lemmas 1-4.

:func:`relu_mlp` is :func:`eit.sample.engine.trace` on :func:`eit.sample.layers.mlp`:
``a^l = W^l h^{l-1}``, ``h^l = ReLU(a^l)``, zero biases, with the backward pass of the paper
(a Gaussian delta at the last pre-activation, or a loss head). :func:`one_layer` samples
``||v||^2 / ||u||^2`` for one layer applied to fixed inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import rescaled
from .engine import gram_root, trace
from .laws import Initializer, standard_normal, standard_uniform
from .layers import mlp
from .traces import Trace

#: Gradient of the loss with respect to the last hidden layer: ``(n_nets, N, n_L) -> same``.
LossGrad = Callable[[torch.Tensor], torch.Tensor]

__all__ = ["LossGrad", "one_layer", "relu_mlp"]


def relu_mlp(x: torch.Tensor, widths: Sequence[int], init: Initializer, *, n_nets: int,
             gen: torch.Generator, delta: str | LossGrad | None = None) -> Trace:
    """Propagate inputs through ``n_nets`` independent random ReLU networks.

    Parameters
    ----------
    x : torch.Tensor
        Inputs ``(N, n_0)`` shared by all networks, or ``(n_nets, N, n_0)``.
    widths : sequence of int
        ``[n_1, ..., n_L]``.
    init : Initializer
        The weight law, e.g. ``eit.sample.laws.he('fan_out')``.
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator (:func:`eit.core.seeds.generator`).
    delta : None, 'random' or callable
        None: forward only. ``'random'``: dloss/da^L is a standard Gaussian vector independent
        of the network (the independence assumption of Theorem 2). A callable
        ``loss_grad(h^L)`` returning dloss/dh^L: then dloss/da^L = 1(a^L > 0) loss_grad(h^L).

    Returns
    -------
    Trace
        ``log_h`` (L+1, n_nets, N); with ``delta``: ``log_delta`` = log ||dloss/da^l||
        (L, n_nets, N), ``log_grad_w`` = log ||dloss/dW^l||_F = log_delta + log ||h^{l-1}||
        (eq. 9) and ``log_grad_w_ratio`` (eq. 7).

    Raises
    ------
    ValueError, TypeError
        On bad arguments, naming them; a wrong-shaped initializer or loss head included.

    References
    ----------
    Arpit & Bengio (2019), eqs. (1), (7), (9) and Theorem 2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> s = relu_mlp(torch.ones(2, 4, dtype=torch.float64), [8, 8], he(), n_nets=3,
    ...              gen=generator(0), delta="random")
    >>> tuple(s.log_h.shape), tuple(s.log_grad_w_ratio.shape)
    ((3, 3, 2), (2, 3, 2))
    """
    widths = v.widths("widths", widths)
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    if not (delta is None or delta == "random" or callable(delta)):
        raise ValueError(f"delta must be None, 'random' or a callable, got {delta!r}")
    backward = "random_preactivation" if delta == "random" else delta
    return trace(mlp(widths, init), x, n_nets=n_nets, gen=gen, backward=backward)


def _chunk(name: str, chunk) -> int:
    return v.positive_int(name, chunk)


def one_layer(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
              variance: float | None = None, mask: str = "relu", p: float = 0.5,
              chunk: int = 2**24) -> torch.Tensor:
    """||v||^2 / ||u||^2 for ``n_nets`` independent draws of one layer R applied to fixed u.

    ``mask='relu'``: v = ReLU(R u) (Arpit & Bengio 2019, Lemmas 1-2). ``mask='bernoulli'``:
    v = (R u) * z with z_i ~ Bernoulli(p) independent of R (Lemmas 3-4, the backward pass),
    a fresh z for every input. R has i.i.d. N(0, variance) entries, by default 2/m for ReLU
    and 1/(p m) for the mask.

    The pre-activations R u of the N inputs are jointly Gaussian, R U^T having i.i.d. rows
    N(0, variance U U^T); they are drawn from that law (N numbers per unit) when N < n, else
    from R itself (n numbers per unit): the same law either way, with the fewer random numbers.

    Parameters
    ----------
    u : torch.Tensor
        One input ``(n,)`` or a batch ``(N, n)`` sharing each R; no zero rows.
    m : int
        The width of the layer.
    n_nets : int
        The number of independent layers.
    gen : torch.Generator
        The random generator.
    variance, mask, p
        As above.
    chunk : int
        At most this many numbers of one kind are held at once (networks and units are split).

    Returns
    -------
    torch.Tensor
        ``(n_nets,)`` for one input, ``(n_nets, N)`` for a batch.

    Raises
    ------
    ValueError
        On bad arguments, naming them (a zero input, chunk < 1, ...).

    References
    ----------
    Arpit & Bengio (2019), Lemmas 1-4.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> one_layer(torch.ones(3, dtype=torch.float64), 16, n_nets=5, gen=generator(0)).shape
    torch.Size([5])
    """
    u = v.tensor("u", u, ndim=(1, 2)).to(device=device(), dtype=DTYPE)
    single = u.ndim == 1
    # the ratio is invariant to the scale of each input: an exact power-of-two rescaling
    # keeps ||u||^2 and the pre-activations within float64 (a no-op at ordinary scales)
    u = rescaled(u.reshape(-1, u.shape[-1]), 1)[0]
    if (u == 0).all(-1).any():
        raise ValueError("u must be non-zero (the ratio ||v||^2/||u||^2 is undefined at 0)")
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    if mask not in ("relu", "bernoulli"):
        raise ValueError(f"mask must be 'relu' or 'bernoulli', got {mask!r}")
    p = v.in_interval("p", p, 0.0, 1.0, closed_hi=True)
    if p == 0:
        raise ValueError("p must be > 0")
    chunk = _chunk("chunk", chunk)
    v.generator("gen", gen, optional=False)
    if variance is None:
        variance = 2.0 / m if mask == "relu" else 1.0 / (p * m)
    std = math.sqrt(v.positive_float("variance", variance))
    n_in, n = u.shape
    conditional = n_in < n
    per_unit = n_in if conditional else n                 # random numbers per unit and net
    width = max(n_in, per_unit)
    units = max(1, min(m, chunk // width))                # units per block
    nets = max(1, min(n_nets, chunk // (units * width)))  # networks per block
    v.memory("chunk", 8.0 * 3 * nets * units * width)
    root = gram_root(u @ u.T) if conditional else None    # R u for all inputs: root @ z
    total = torch.zeros(n_nets, n_in, dtype=DTYPE, device=device())
    for start in range(0, n_nets, nets):
        k = min(nets, n_nets - start)
        for first in range(0, m, units):
            w = min(units, m - first)
            z = standard_normal(k, w, per_unit, gen=gen)
            a = std * (z @ (root.T if conditional else u.T))   # (k, w, N)
            if mask == "relu":
                a = a.clamp_min(0)
            else:
                a = a * (standard_uniform(k, w, n_in, gen=gen) < p)
            total[start:start + k] += a.square().sum(-2)
    ratio = total / u.square().sum(-1)
    return ratio[:, 0] if single else ratio
