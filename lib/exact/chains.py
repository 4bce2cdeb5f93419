"""Exact samplers of Gaussian ReLU networks that never materialize a weight matrix.

For Gaussian weights W ~ N(0, sigma^2) of shape (n_out, n_in), the pre-activations of the
next layer given the activations H (N inputs) are n_out i.i.d. Gaussian vectors in R^N with
covariance sigma^2 G, G = H H^T the N x N Gram matrix. So the forward statistics of a deep
net are a Markov chain of Gram matrices (``gram_chain``), cost O(n_out N^2 + N^3) per layer
instead of O(n_out n_in N).

For one input the chain is a chain of scalars (``norm_chain``), O(1) per layer:
r_l = ||h^l||^2 = sigma_l^2 r_{l-1} chi^2_{K_l} with K_l ~ Bin(n_l, 1/2). The backward pass
is exact too. Conditionally on the forward pass, W^{l+1} = a^{l+1} h^l^T / r_l + Z P_perp with
Z independent Gaussian, and c = a^l . dloss/da^l is the same at every layer (Euler's identity
for the positively homogeneous ReLU net), so q_l = ||dloss/da^l||^2 obeys
q_l = c^2 / r_l + sigma_{l+1}^2 q_{l+1} chi^2_{K_l - 1}. With several inputs the backward
law couples the inputs through the shared weights; there we offer no exact sampler.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from scipy import special

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..sample.mlp import MLPStats


def _layer_variances(widths: list[int], variances: Sequence[float]) -> list[float]:
    """Validate one positive weight variance per layer."""
    if isinstance(variances, str) or not isinstance(variances, (Sequence, np.ndarray)):
        raise ValueError(f"variances must be a sequence of positive numbers, got {variances!r}")
    if len(variances) != len(widths):
        raise ValueError(f"variances must have one entry per layer ({len(widths)}), "
                         f"got {len(variances)}")
    return [v.positive_float(f"variances[{i}]", s) for i, s in enumerate(variances)]


def _log_chi2(dof: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """log of chi-squared samples with integer degrees of freedom ``dof`` (0 gives -inf).

    Inverse-CDF sampling from the generator's uniforms (deterministic given the seed).
    """
    u = rand(*dof.shape, gen=gen).cpu().numpy()
    k = dof.cpu().numpy().astype(np.float64)
    with np.errstate(divide="ignore"):
        x = np.where(k > 0, 2.0 * special.gammaincinv(np.maximum(k, 1e-300) / 2, u), 0.0)
        out = np.where(k > 0, np.log(x), -np.inf)
    return torch.from_numpy(out).to(device=device(), dtype=DTYPE)


def _binomial(n: int, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    count = torch.full(shape, float(n), dtype=DTYPE, device=gen.device)
    return torch.binomial(count, torch.full_like(count, 0.5), generator=gen).to(device())


def norm_chain(n0: int, widths: Sequence[int], variances: Sequence[float], *, n_nets: int,
               gen: torch.Generator, delta: str | None = None) -> MLPStats:
    """Exact law of (log ||h^l||, log ||dloss/da^l||) for one input of norm 1, ``n_nets`` nets.

    Same law as :func:`eit.sample.mlp.relu_mlp` with Gaussian weights of variance
    ``variances[l]`` in layer l and ``delta='random'`` (a standard Gaussian dloss/da^L
    independent of the network). The input dimension ``n0`` enters only through delta's law.
    """
    v.positive_int("n0", n0)
    widths = v.widths("widths", widths)
    sig2 = _layer_variances(widths, variances)
    n_nets = v.positive_int("n_nets", n_nets)
    if delta not in (None, "random"):
        raise ValueError(f"delta must be None or 'random', got {delta!r}")
    shape = (n_nets, 1)
    log_r = torch.zeros(shape, dtype=DTYPE, device=device())
    log_r_all, actives = [log_r], []
    for n, s2 in zip(widths, sig2, strict=True):
        k = _binomial(n, shape, gen)
        log_r = log_r + np.log(s2) + _log_chi2(k, gen)
        log_r_all.append(log_r)
        actives.append(k)
    log_h = 0.5 * torch.stack(log_r_all)
    if delta is None:
        return MLPStats(log_h, None)
    # top: a^L = W^L h^{L-1}, ||a^L||^2 = s2 r_{L-1} chi2_{n_L}; delta ~ N(0, I) independent.
    n_top, s2_top = widths[-1], sig2[-1]
    k_top = actives[-1]
    log_a2 = _log_a2(log_r_all, k_top, n_top, s2_top, gen)
    z = randn(*shape, gen=gen)                       # c = a . delta = ||a|| z
    log_c2 = log_a2 + torch.log(z.square())
    log_q = torch.logaddexp(torch.log(z.square()),
                            _log_chi2(torch.full(shape, n_top - 1, dtype=DTYPE), gen))
    log_q_all = [log_q]
    for l in range(len(widths) - 1, 0, -1):          # q_l from q_{l+1}
        noise = np.log(sig2[l]) + log_q + _log_chi2(actives[l - 1] - 1, gen)
        log_q = torch.logaddexp(log_c2 - log_r_all[l], noise)
        log_q_all.append(log_q)
    return MLPStats(log_h, 0.5 * torch.stack(log_q_all[::-1]))


def _log_a2(log_r_all, k_top, n_top, s2_top, gen):
    """log ||a^L||^2: the active part is r_L, the inactive part s2 r_{L-1} chi2_{n_L - K_L}."""
    inactive = log_r_all[-2] + np.log(s2_top) + _log_chi2(n_top - k_top, gen)
    return torch.logaddexp(log_r_all[-1], inactive)


def _gram_root(gram: torch.Tensor) -> torch.Tensor:
    """A square root R with R R^T = G: Cholesky, or the eigendecomposition where G is singular."""
    root, info = torch.linalg.cholesky_ex(gram)
    singular = info != 0
    if singular.any():
        evals, evecs = torch.linalg.eigh(gram[singular])
        root = root.clone()
        root[singular] = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
    return root


def gram_chain(x: torch.Tensor, widths: Sequence[int], variances: Sequence[float], *,
               n_nets: int, gen: torch.Generator) -> MLPStats:
    """Forward log-norms of N inputs through ``n_nets`` Gaussian ReLU nets via Gram matrices.

    Same law as the forward pass of :func:`eit.sample.mlp.relu_mlp` with Gaussian weights of
    variance ``variances[l]``; cost O(n_l N^2 + N^3) per layer. Returns no backward pass.
    """
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    widths = v.widths("widths", widths)
    sig2 = _layer_variances(widths, variances)
    n_nets = v.positive_int("n_nets", n_nets)
    n_in = x.shape[0]
    gram = (x @ x.T).expand(n_nets, n_in, n_in)
    log_scale = torch.zeros(n_nets, 1, dtype=DTYPE, device=device())
    log_h = [0.5 * torch.log(torch.diagonal(gram, dim1=-2, dim2=-1))]
    for n, s2 in zip(widths, sig2, strict=True):
        root = _gram_root(gram)
        a = np.sqrt(s2) * randn(n_nets, n, n_in, gen=gen) @ root.transpose(-2, -1)
        h = a.clamp_min(0)
        gram = h.transpose(-2, -1) @ h
        trace = torch.diagonal(gram, dim1=-2, dim2=-1).mean(-1, keepdim=True)
        gram = gram / trace.clamp_min(torch.finfo(DTYPE).tiny).unsqueeze(-1)
        log_scale = log_scale + torch.log(trace)
        log_h.append(0.5 * (torch.log(torch.diagonal(gram, dim1=-2, dim2=-1)) + log_scale))
    return MLPStats(torch.stack(log_h), None)
