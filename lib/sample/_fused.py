"""The device path of plain ReLU chains: few kernels per layer, no host synchronization.

On a GPU an engine's time at the sizes of this book is set by the number of kernels it
launches, not by its arithmetic (``tools/benchmark.py --device cuda``; issue 28). The general
engines normalize every leaf's output (five kernels: norm, clamp, divide, log, add) so that
any description at any depth stays within float64. For the commonest description, a chain of
``Dense(Gaussian, no bias) -> ReLU`` elements (:func:`eit.sample.layers.mlp` with a Gaussian
law, Arpit & Bengio 2019 eq. 1, Hanin & Rolnick 2018 eq. 3), the engines take this path on a
device instead:

* a weight matrix is its standard normal draw Z; the standard deviation sigma_l enters the
  log-norms only (``W h = sigma_l Z h``), as a number added once per row at the end;
* ReLU is positively homogeneous, so the vectors are carried unnormalized with a log-scale
  and rescaled to unit length every :data:`RENORM` layers only;
* the log-norms are taken once for all rows at the end (one log, one stack), and checked for
  overflow once (one host synchronization per call, none inside the layer loop);
* the backward mask is ReLU's own kernel (``threshold_backward``).

The explicit chain (:func:`explicit`) draws the same numbers in the same order as the general
engine (:func:`eit.sample.engine.trace`): on the simulated device, whose streams are the
CPU's, the two agree to rounding. The exact chains (:func:`conditional`) sample the
conditional Gaussian law of :mod:`eit.exact.engine`: one input per network by the vector
sampler ``W h ~ ||h|| sigma N(0, I)`` (the same numbers as the general engine), several by a
QR factor of the layer's input (``H^T = Q R``, so ``H H^T = R^T R`` and ``A^T = Z R`` has
i.i.d. rows ``N(0, H H^T)``: exact for singular batches too, without the Cholesky fallback).

The CPU keeps the general engines, bit for bit: their random streams and rounding are those
of the committed chapters (``tests/test_op_counts.py`` counts both paths).
"""

from __future__ import annotations

import math

import torch

from ..core import validate as v
from ..core.device import device
from .laws import Law, standard_normal
from .layers import Dense, ReLU, Serial
from .traces import Trace

#: The vectors are rescaled to unit length every RENORM layers. Between two rescalings a
#: vector's norm changes by the product of RENORM layers' factors ``||ReLU(Z u)||`` (Z a
#: standard normal matrix, u a unit vector), each about ``sqrt(n_l / 2)``: at most ``1e13``
#: for widths up to ``4 * 10^3`` (the largest in this book), far inside float64; a factor
#: below ``1e-38`` has probability below ``1e-37`` per layer.
RENORM = 8

__all__ = ["RENORM", "applies", "chain", "conditional", "explicit"]


def chain(net: Serial) -> list[Dense] | None:
    """The dense layers if ``net`` is a chain of ``Dense(Gaussian) -> ReLU`` elements.

    Parameters
    ----------
    net : Serial
        A description (:mod:`eit.sample.layers`).

    Returns
    -------
    list of Dense or None
        One layer per element; None for any other description (biases allowed).

    Examples
    --------
    >>> from eit.sample.layers import Scale, mlp
    >>> len(chain(mlp([4, 4]))), chain(mlp([4], activation=Scale(2.0)))
    (2, None)
    """
    dense = []
    for element in net.layers:
        leaves = element.leaves()
        if not (len(leaves) == 2 and isinstance(leaves[0], Dense)
                and isinstance(leaves[1], ReLU)):
            return None
        law = leaves[0].law
        if not (isinstance(law, Law) and law.distribution == "normal"):
            return None
        dense.append(leaves[0])
    return dense


def applies(net: Serial, *, observe, record) -> list[Dense] | None:
    """The dense layers where the device path applies to ``net``, else None.

    It applies on a device (not the CPU), to a chain (:func:`chain`) without biases, of
    inputs with one feature axis, with no observer and no optional statistic.
    """
    if device().type == "cpu" or observe or record or net.in_ndim not in (None, 1):
        return None
    dense = chain(net)
    if dense is None or any(layer.bias is not None for layer in dense):
        return None
    return dense


def _fans(dense: list[Dense], n0: int) -> list[int]:
    fans = [n0]
    for layer in dense:
        fans.append(fans[-1] if layer.width is None else layer.width)
    return fans


def _log_sigmas(dense: list[Dense], fans: list[int]) -> list[float]:
    """log sigma_l of every layer (the standard deviation of its Gaussian weights)."""
    return [0.5 * math.log(v.positive_float("variance", float(layer.law.rule(a, b))))
            for layer, a, b in zip(dense, fans[:-1], fans[1:], strict=True)]


class _Rows:
    """Log-norms of the rows of a pass, taken at the end: ``log||v_l|| = S_l + o_l + log r_l``.

    ``r_l`` is the norm of the carried (unnormalized) vector, ``S_l`` the log-scale tensor of
    the last rescaling and ``o_l`` the sum of the log sigmas since (a number).
    """

    def __init__(self, scale: torch.Tensor):
        self.scale, self.offset = scale, 0.0
        self.norms: list[torch.Tensor] = []
        self.scales: list[torch.Tensor] = []
        self.offsets: list[float] = []

    def add(self, r: torch.Tensor, log_sigma: float = 0.0) -> None:
        """Record the norm ``r`` of a row, after a layer of standard deviation sigma."""
        self.offset += log_sigma
        self.norms.append(r)
        self.scales.append(self.scale)
        self.offsets.append(self.offset)

    def rescale(self, v: torch.Tensor, dim: int) -> torch.Tensor:
        """``v`` (the last row's vector) at unit length along ``dim``; the scale moves here."""
        r = self.norms[-1]
        self.scale = self.scale + (self.offset + torch.log(r))
        self.offset = 0.0
        return v / r.clamp_min(torch.finfo(r.dtype).tiny).unsqueeze(dim)

    def log_norms(self, what: str) -> torch.Tensor:
        """``(rows, *shape)`` log-norms; a FloatingPointError if a norm overflowed."""
        r = torch.stack(self.norms)
        _finite(r, what)
        offsets = torch.tensor(self.offsets, dtype=r.dtype, device=r.device)
        return torch.log(r) + torch.stack(self.scales) + offsets.view(-1, *[1] * (r.ndim - 1))


def _unit(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The engines' start: unit inputs and their log-norms (exact power-of-two rescaling)."""
    from ..core.scaling import LOG2, rescaled
    from .engine import _normalize

    h, e = rescaled(h, 2)
    h, log_r = _normalize(h, "x")
    return h, log_r + e.to(log_r.dtype) * LOG2


def explicit(dense: list[Dense], h: torch.Tensor, *, gen: torch.Generator,
             backward: str | None, widths: tuple[int, ...], keep_bytes: float) -> Trace | None:
    """The explicit engine's trace of a plain ReLU chain on a device.

    Parameters
    ----------
    dense : list of Dense
        The chain's layers (:func:`applies`).
    h : torch.Tensor
        Inputs ``(n_nets, N, n_0)`` on the device.
    gen : torch.Generator
        The random generator; its numbers are drawn as the general engine draws them.
    backward : None, 'random' or 'random_preactivation'
        The cotangent (:meth:`eit.sample.engine.Pass.backward`).
    widths : tuple of int
        The trace's widths.
    keep_bytes : float
        The memory the backward pass may keep (weights and ReLU outputs).

    Returns
    -------
    Trace or None
        The trace of :func:`eit.sample.engine.trace`; None where the backward pass would not
        fit in ``keep_bytes`` (the general engine then re-draws the weights).

    References
    ----------
    Arpit & Bengio (2019), eqs. (1), (7) and (9).
    """
    n_nets, n_in, _ = h.shape
    fans = _fans(dense, h.shape[-1])
    kept = sum(8.0 * n_nets * b * (a + n_in) for a, b in zip(fans[:-1], fans[1:]))
    if backward is not None and kept > keep_bytes:
        return None
    sigmas = _log_sigmas(dense, fans)
    u, log_r0 = _unit(h)
    rows = _Rows(log_r0)
    zs, ys = [], []
    for l, (a, b) in enumerate(zip(fans[:-1], fans[1:], strict=True), start=1):
        z = standard_normal(n_nets, b, a, gen=gen)         # W^l = sigma_l Z
        y = torch.relu(torch.matmul(u, z.transpose(-2, -1)))
        rows.add(torch.linalg.vector_norm(y, dim=-1), sigmas[l - 1])
        if backward is not None:
            zs.append(z)
            ys.append(y)
        u = rows.rescale(y, -1) if l % RENORM == 0 and l < len(dense) else y
    log_h = torch.cat([log_r0.unsqueeze(0), rows.log_norms("Dense")])
    meta = {"engine": "explicit"}
    if backward is None:
        return Trace(log_h, widths=widths, meta=meta)
    g = standard_normal(n_nets, n_in, fans[-1], gen=gen)    # dL/dh^L or dL/da^L
    top = torch.linalg.vector_norm(g, dim=-1)
    if backward == "random":
        g = torch.ops.aten.threshold_backward(g, ys[-1], 0.0)
    deltas, grads = _Rows(torch.zeros_like(log_r0)), _Rows(torch.zeros_like(log_r0))
    for l in range(len(dense), 0, -1):
        deltas.scale, deltas.offset = grads.scale, grads.offset
        deltas.add(torch.linalg.vector_norm(g, dim=-1))    # ||dL/da^l||
        g = torch.matmul(g, zs[l - 1])
        grads.add(torch.linalg.vector_norm(g, dim=-1), sigmas[l - 1])    # ||dL/dh^{l-1}||
        if (len(dense) - l + 1) % RENORM == 0 and l > 1:
            g = grads.rescale(g, -1)
        if l > 1:
            g = torch.ops.aten.threshold_backward(g, ys[l - 2], 0.0)
    return _backward_trace(log_h, deltas, grads, top, widths, meta)


def conditional(dense: list[Dense], h: torch.Tensor, *, gen: torch.Generator,
                backward: str | None, widths: tuple[int, ...]) -> Trace:
    """The exact engine's trace of a plain ReLU chain on a device, without weights.

    Forward, one input per network: the vector sampler, ``ReLU(W h) ~ ||h|| sigma ReLU(z)``
    with ``z ~ N(0, I)`` (the general engine's numbers). Otherwise the layer's input is
    carried transposed and factored, ``H^T = Q R`` (one QR factorization, Q with k = min(n,
    N) orthonormal columns); ``W Q = sigma Z`` with Z a standard normal n_l x k matrix, so
    ``A^T = W H^T = sigma Z R`` has i.i.d. rows ``N(0, sigma^2 H H^T)``. The backward pass
    uses the same Z: ``W = sigma (Z Q^T + G (I - Q Q^T))`` with G independent of the
    forward pass, so ``dL/dH = sigma (dA Z Q^T + dA G (I - Q Q^T))``, and ``dA G`` has the
    law ``R_g^T Z'`` (``dA^T = Q_g R_g``, Z' standard normal N x n_{l-1}): exact for
    singular batches too (Z is the forward's own draw, not solved for).

    Parameters
    ----------
    dense : list of Dense
        The chain's layers (:func:`applies`).
    h : torch.Tensor
        Inputs ``(n_nets, N, n_0)`` on the device.
    gen : torch.Generator
        The random generator.
    backward : None, 'random' or 'random_preactivation'
        The cotangent (:meth:`eit.sample.engine.Pass.backward`).
    widths : tuple of int
        The trace's widths.

    Returns
    -------
    Trace
        ``log_h`` (L+1, n_nets, N); with ``backward``, ``log_grad``, ``log_delta`` and
        ``log_grad_w``; ``meta`` of the exact engine's conditional method.

    References
    ----------
    Hanin & Rolnick (2018), section 3.1; the conditional law of :mod:`eit.exact.engine`;
    Arpit & Bengio (2019), Theorem 2 (the random delta).
    """
    n_nets, n_in, _ = h.shape
    fans = _fans(dense, h.shape[-1])
    sigmas = _log_sigmas(dense, fans)
    u, log_r0 = _unit(h)
    meta = {"engine": "exact", "method": "conditional"}
    if n_in == 1 and backward is None:           # the vector sampler: ||h|| is in log_r
        r = torch.stack([torch.linalg.vector_norm(
            torch.relu(standard_normal(n_nets, 1, b, gen=gen)), dim=-1) for b in fans[1:]])
        _finite(r, "Dense")
        steps = torch.log(r) + torch.tensor(sigmas, dtype=r.dtype, device=r.device)[:, None, None]
        return Trace(torch.cat([log_r0.unsqueeze(0), log_r0 + torch.cumsum(steps, 0)]),
                     widths=widths, meta=meta)
    rows = _Rows(log_r0)
    v = u.transpose(-2, -1)                      # H^T: (n_nets, n_{l-1}, N)
    tape = []                                    # (Q, Z, ReLU(A^T)) of every layer
    for l, b in enumerate(fans[1:], start=1):
        q, r_factor = torch.linalg.qr(v, mode="reduced" if backward else "r")
        z = standard_normal(n_nets, b, r_factor.shape[-2], gen=gen)
        v = torch.relu(torch.matmul(z, r_factor))  # ReLU(A^T) / sigma
        rows.add(torch.linalg.vector_norm(v, dim=-2), sigmas[l - 1])
        if backward is not None:
            tape.append((q, z, v))
        if l % RENORM == 0 and l < len(dense):
            v = rows.rescale(v, -2)
    log_h = torch.cat([log_r0.unsqueeze(0), rows.log_norms("Dense")])
    if backward is None:
        return Trace(log_h, widths=widths, meta=meta)
    g = standard_normal(n_nets, fans[-1], n_in, gen=gen)   # (dL/dh^L or dL/da^L)^T
    top = torch.linalg.vector_norm(g, dim=-2)
    if backward == "random":
        g = torch.ops.aten.threshold_backward(g, tape[-1][2], 0.0)
    deltas, grads = _Rows(torch.zeros_like(log_r0)), _Rows(torch.zeros_like(log_r0))
    for l in range(len(dense), 0, -1):
        q, z, _ = tape[l - 1]
        deltas.scale, deltas.offset = grads.scale, grads.offset
        deltas.add(torch.linalg.vector_norm(g, dim=-2))                 # ||dL/da^l||
        r_g = torch.linalg.qr(g, mode="r").R                            # dA^T = Q_g R_g
        fresh = torch.matmul(standard_normal(n_nets, fans[l - 1], r_g.shape[-2], gen=gen),
                             r_g)                                       # (dA G)^T
        t = torch.baddbmm(torch.matmul(z.transpose(-2, -1), g), q.transpose(-2, -1), fresh,
                          alpha=-1.0)             # (dA Z - dA G Q)^T
        g = torch.baddbmm(fresh, q, t)                                  # (dL/dH)^T / sigma
        grads.add(torch.linalg.vector_norm(g, dim=-2), sigmas[l - 1])   # ||dL/dh^{l-1}||
        if (len(dense) - l + 1) % RENORM == 0 and l > 1:
            g = grads.rescale(g, -2)
        if l > 1:
            g = torch.ops.aten.threshold_backward(g, tape[l - 2][2], 0.0)
    return _backward_trace(log_h, deltas, grads, top, widths, meta)


def _backward_trace(log_h, deltas: _Rows, grads: _Rows, top: torch.Tensor, widths, meta
                    ) -> Trace:
    """The trace of a backward pass: rows of ``deltas`` and ``grads`` were added from the top
    layer down; ``top`` is the norm of the cotangent at the output."""
    log_delta = deltas.log_norms("Dense").flip(0)
    log_grad = torch.cat([grads.log_norms("Dense").flip(0), torch.log(top).unsqueeze(0)])
    stats = {"log_delta": log_delta, "log_grad_w": log_delta + log_h[:-1]}
    return Trace(log_h, log_grad, stats, widths=widths, meta=meta)


def _finite(r: torch.Tensor, what: str) -> None:
    """A FloatingPointError if a norm overflowed (one host check per pass)."""
    if not bool(torch.isfinite(r).all()):
        raise FloatingPointError(f"{what}: a vector overflowed or became NaN")
