"""The explicit engine: one batched pass of ``n_nets`` independent random networks.

:func:`trace` consumes a layer description (:mod:`eit.sample.layers`), draws every weight from
its law, and returns a :class:`~eit.sample.traces.Trace`: per-layer log-norms of the forward
pass, optionally of a backward pass, and the statistics the layers define.

Conventions (shared with the exact engines of :mod:`eit.exact.engine`):

* the state of the networks is a tensor ``(n_nets, N, *features)``: network, input, features;
  traces are ``(layer, net, input)``;
* widths: a description gives the widths of its layers, the input width comes from ``x``;
* log-norms are natural logarithms. The pass *normalizes and accumulates*: after every leaf
  layer each input's vector is rescaled to unit length and its log-length is added to a
  running log-norm. For positively homogeneous layers (zero-bias dense and convolutional
  layers, ReLU, leaky ReLU, scales, residual blocks of those) the layer acts on the unit
  vector, which is exact, so depth 1000 in an exploding or vanishing regime stays finite.
  Other layers (biases, tanh) act on the actual vector; batch normalization, invariant to a
  per-network scale, acts on the vectors rescaled by the largest norm of the network;
* a zero vector has log-norm ``-inf`` and stays ``-inf`` (a dead ReLU network), never NaN;
* inputs of any finite scale: each input is first rescaled by an exact power of two where
  its squared norm would overflow or lose digits (:func:`eit.core.scaling.rescaled`).

The backward pass propagates a cotangent the same way (every vector-Jacobian product is
linear). Weights are kept for it while they fit in :data:`KEEP_FRACTION` of the available
memory; beyond, each weight matrix is re-drawn from the generator state saved in the forward
pass (the same numbers either way).

A Gaussian dense layer of at least :data:`~eit.sample.laws.PARALLEL_MIN` weights (all
networks together) on the CPU is drawn as the stream :func:`~eit.sample.laws.chunks` and
multiplied chunk by chunk while each chunk is in the cache: the same weights as drawing the
layer whole, never read back from memory for the forward product, and never held at all
without a backward pass.

On a device (not the CPU), :func:`trace` of a chain of ``Dense(Gaussian, no bias) -> ReLU``
elements without observers or optional statistics takes the device path of
``eit.sample._fused`` (fewer kernels per layer: ``data/benchmarks/op_counts.json``): the
same random numbers, the same results to rounding. :func:`forward` (a :class:`Pass`) always
takes the general path.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import LOG2, rescaled
from . import _fused as fused
from .laws import PARALLEL_MIN, Law, check_initializer, chunks, rows, standard_normal
from .layers import (
    Activation,
    BatchNorm,
    Conv,
    Dense,
    Layer,
    LeakyReLU,
    ReLU,
    Residual,
    Scale,
    Serial,
    WeightNorm,
    as_serial,
)
from .traces import Trace

#: Weights are kept for the backward pass while they fit in this fraction of the memory
#: available when the pass starts; beyond, they are re-drawn from the saved generator states.
KEEP_FRACTION = 0.25

#: A loss head: dL/dh^L from the output h^L, both ``(n_nets, N, *features)``.
LossGrad = Callable[[torch.Tensor], torch.Tensor]
#: An observer: a statistic of the state, ``fn(h_unit, log_norm) -> (n_nets, ...)``.
Observer = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

#: Optional statistics that a forward pass can be asked to record (``record=``).
OPTIONAL = ("isometry_gap", "log_grad_w_batch", "nonlinearity", "log_bn_jacobian",
            "log_grad_w_batch_op")

#: The optional statistics of the batch loss's weight gradient (they keep the dense inputs).
_BATCH_GRADS = frozenset({"log_grad_w_batch", "log_grad_w_batch_op"})

BACKWARDS = ("random", "random_preactivation")

__all__ = ["BACKWARDS", "KEEP_FRACTION", "LossGrad", "Observer", "OPTIONAL", "Pass", "forward",
           "gram_root", "isometry_gap", "trace"]


# ------------------------------------------------------------------------------ helpers

def _view(r: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return r.reshape(*r.shape, *([1] * (like.ndim - r.ndim)))


#: The checks a pass defers to its end (one host synchronization per pass, not per layer):
#: kind -> (whether a tensor passes, on the device; the error it raises otherwise).
_CHECKS = {
    "norm": (lambda r: torch.isfinite(r).all(), lambda what, r, _: FloatingPointError(
        f"{what}: a vector overflowed or became NaN; layers that are not positively "
        "homogeneous (biases, tanh) cannot carry their scale in log space, so their "
        "inputs must stay within float64")),
    "actual": (lambda s: ~torch.isinf(s).any(), lambda what, _, log_r: FloatingPointError(
        f"{what}: the input's norm exceeds float64 (log-norm {float(log_r.max()):.4g}); a "
        "layer that is not positively homogeneous cannot act on it")),
    "batchnorm": (lambda r_f: (r_f != 0).all(), lambda *_: ValueError(
        "BatchNorm: a feature is 0 on every input of a network (a zero row of X), where BN "
        "is undefined")),
}


def _defer(checks: list | None, kind: str, what: str, t: torch.Tensor,
           extra: torch.Tensor | None = None) -> None:
    """Check ``t`` now (``checks`` None) or append it to the pass's ``checks``."""
    if checks is None:
        _raise_first([(kind, what, t, extra)])
    else:
        checks.append((kind, what, t, extra))


def _raise_first(checks: list) -> None:
    """Raise the error of the first failing deferred check, if any; empty ``checks``.

    One host synchronization for all of them: the tensors of each kind are concatenated and
    checked on the device; only when one fails are they checked one by one, in order.
    """
    if not checks:
        return
    pending = list(checks)
    checks.clear()
    ok = None
    for kind, (passes, _) in _CHECKS.items():
        ts = [t.reshape(-1) for k, _, t, _ in pending if k == kind]
        if ts:
            flag = passes(torch.cat(ts) if len(ts) > 1 else ts[0])
            ok = flag if ok is None else ok & flag
    if bool(ok):
        return
    for kind, what, t, extra in pending:
        passes, error = _CHECKS[kind]
        if not bool(passes(t)):
            raise error(what, t, extra)


@contextlib.contextmanager
def _checked(checks: list) -> Iterator[None]:
    """Run a pass, then its deferred checks; a deferred error comes before a later one."""
    try:
        yield
    except Exception:
        _raise_first(checks)
        raise
    _raise_first(checks)


def _normalize(y: torch.Tensor, what: str,
               checks: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(unit vectors, log-norms) over the feature axes; a zero vector stays 0 with -inf.

    A norm that is not finite raises FloatingPointError: now, or at the end of the pass when
    the pass's ``checks`` list is given (no host synchronization per layer).
    """
    r = y.flatten(2).norm(dim=-1)
    _defer(checks, "norm", what, r)
    return y / _view(r.clamp_min(torch.finfo(r.dtype).tiny), y), torch.log(r)


def _actual(h: torch.Tensor, log_r: torch.Tensor, what: str,
            checks: list | None = None) -> torch.Tensor:
    """The actual vectors h * exp(log_r) (0 for a zero vector)."""
    scale = torch.exp(log_r)
    _defer(checks, "actual", what, scale, log_r)
    return h * _view(scale, h)


def _shift(log_r: torch.Tensor) -> torch.Tensor:
    """The largest log-norm of each network (0 where all are -inf), shape (n_nets, 1)."""
    m = log_r.amax(dim=1, keepdim=True)
    return torch.where(torch.isfinite(m), m, torch.zeros_like(m))


def _relative(h: torch.Tensor, log_r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The vectors rescaled by the largest norm of their network, and that log-scale."""
    m = _shift(log_r)
    return h * _view(torch.exp(log_r - m), h), m


def _combine(h1, l1, h2, l2, c2: float, checks: list | None = None):
    """Unit form of exp(l1) h1 + c2 exp(l2) h2 (per input), all in log space."""
    lc2 = math.log(c2) if c2 > 0 else -math.inf
    m = torch.maximum(l1, l2 + lc2)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    y = h1 * _view(torch.exp(l1 - m), h1) + h2 * _view(torch.exp(l2 + lc2 - m), h2)
    unit, ly = _normalize(y, "residual", checks)
    return unit, m + ly


def _inner(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).flatten(2).sum(-1)


def _at_least(name: str, value, ndim: int) -> torch.Tensor:
    """A finite floating-point tensor of at least ``ndim`` dimensions (errors name it)."""
    if isinstance(value, torch.Tensor) and value.ndim < ndim:
        raise ValueError(f"{name} must have at least {ndim} dimensions, got shape "
                         f"{tuple(value.shape)}")
    return v.tensor(name, value, ndim=value.ndim if isinstance(value, torch.Tensor) else ndim)


def gram_root(m: torch.Tensor) -> torch.Tensor:
    """R with R R^T = m for a stack of symmetric positive semi-definite matrices.

    Cholesky, or the eigendecomposition (eigenvalues clamped at 0) where m is singular.
    ``m`` is ``(..., d, d)``, finite and floating point (else a ValueError or TypeError naming
    it).

    Examples
    --------
    >>> r = gram_root(torch.tensor([[[4.0, 0.0], [0.0, 0.0]]], dtype=torch.float64))
    >>> r @ r.transpose(-2, -1)
    tensor([[[4., 0.],
             [0., 0.]]], dtype=torch.float64)
    """
    m = _at_least("m", m, 2)
    if m.shape[-1] != m.shape[-2]:
        raise ValueError(f"m must be a (stack of) square matrices, got shape {tuple(m.shape)}")
    return _gram_root(m)


def _gram_root(m: torch.Tensor) -> torch.Tensor:
    """``gram_root`` without the checks of its argument: the engines' per-layer call, which
    must not synchronize with the host to check finiteness (tests/test_op_counts.py)."""
    root, info = torch.linalg.cholesky_ex(m)
    singular = info != 0
    if bool(singular.any()):
        evals, evecs = torch.linalg.eigh(m[singular])
        root = root.clone()
        root[singular] = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
    return root


def isometry_gap(y: torch.Tensor) -> torch.Tensor:
    """phi of Meterez et al. (2024), eq. (5), of each network's batch ``y`` (n_nets, N, d).

    phi = log(tr(G)/N) - (1/N) log det G with G = y y^T the N x N Gram matrix of the inputs;
    +inf where the inputs are linearly dependent. Invariant to the scale of each network's
    batch, and computed so at any finite scale (an exact power-of-two rescaling). ``y`` is
    finite and floating point, with at least three dimensions (else an error naming it).

    Examples
    --------
    >>> float(isometry_gap(torch.eye(3, dtype=torch.float64).unsqueeze(0))[0])
    0.0
    """
    y = _at_least("y", y, 3)
    n = y.shape[1]
    # phi is invariant to the scale of each network's batch: an exact power-of-two rescaling
    # keeps the Gram matrix within float64 (a no-op at ordinary scales, bit for bit)
    flat = rescaled(y.flatten(2), 1)[0]
    lam = torch.linalg.eigvalsh(flat @ flat.transpose(-2, -1))
    degenerate = torch.linalg.matrix_rank(flat) < n
    safe = lam.clamp_min(torch.finfo(lam.dtype).tiny)
    gap = (torch.log(safe.mean(dim=-1)) - torch.log(safe).mean(dim=-1)).clamp_min(0.0)
    return torch.where(degenerate, torch.full_like(gap, math.inf), gap)


# ------------------------------------------------------------------------------ the pass

@dataclass
class _Record:
    """What the backward pass needs from one leaf (or combinator) of the forward pass."""

    layer: Layer
    data: dict = field(default_factory=dict)


@dataclass
class _Context:
    n_nets: int
    gen: torch.Generator
    backward: bool
    record: frozenset
    keep_budget: float
    emitted: dict = field(default_factory=dict)
    #: A rule for the linear layers other than drawing their weights (the exact engines'
    #: conditional Gaussian sampler): an object with ``forward(layer, h, log_r, ctx, rec)``
    #: and ``backward(rec, g, log_g, ctx)``, or None.
    rule: object | None = None
    #: Feature shapes at the inputs of the enclosing residual blocks (innermost last).
    stream: list = field(default_factory=list)
    #: The checks deferred to the end of the pass (:func:`_raise_first`).
    checks: list = field(default_factory=list)
    #: The largest allocation already checked against the available memory in this pass
    #: (``torch.cuda.mem_get_info`` is a driver call: once per size, not once per layer).
    checked_bytes: float = 0.0

    def memory(self, name: str, n_bytes: float) -> None:
        """:func:`eit.core.validate.memory`, skipped where a larger size already fit."""
        if not n_bytes <= self.checked_bytes:
            v.memory(name, n_bytes)
            self.checked_bytes = n_bytes

    def fan_out(self, layer: Dense, fan_in: int) -> int:
        """The width of a dense layer: its own, else its block's stream width, else fan_in."""
        if layer.width is not None:
            return layer.width
        return self.stream[-1][-1] if self.stream else fan_in

    def emit(self, name: str, value: torch.Tensor) -> None:
        self.emitted.setdefault(name, []).append(value)


def _draw_dense(layer: Dense, ctx: _Context, fan_out: int, fan_in: int):
    """(matrix, factor): the weights are factor * matrix (a Gaussian law draws N(0, 1))."""
    law = layer.law
    if isinstance(law, Law) and law.distribution == "normal":
        var = v.positive_float("variance", float(law.rule(fan_in, fan_out)))
        n = ctx.n_nets * fan_out * fan_in
        ctx.memory("n_nets, widths", 8.0 * n)
        return standard_normal(ctx.n_nets, fan_out, fan_in, gen=ctx.gen), math.sqrt(var)
    if isinstance(law, Law):
        return law(ctx.n_nets, fan_out, fan_in, ctx.gen), 1.0
    return check_initializer("law", law, ctx.n_nets, fan_out, fan_in, ctx.gen), 1.0


def _streamed_std(layer: Dense, ctx: _Context, fan_out: int, fan_in: int) -> float | None:
    """The weights' standard deviation where a layer is drawn as a stream (else None).

    A Gaussian dense layer whose weights are drawn in chunks (at least
    :data:`~eit.sample.laws.PARALLEL_MIN` numbers on a CPU generator) is multiplied chunk by
    chunk, while each chunk is in the cache; smaller layers are drawn whole.
    """
    law = layer.law
    if not (isinstance(law, Law) and law.distribution == "normal"
            and ctx.gen.device.type == "cpu" and device().type == "cpu"
            and ctx.n_nets * fan_out * fan_in >= PARALLEL_MIN):
        return None
    return math.sqrt(v.positive_float("variance", float(law.rule(fan_in, fan_out))))


def _apply_rows(x: torch.Tensor, rows_: torch.Tensor, first: int, a: torch.Tensor) -> None:
    """Write x @ W^T for the rows ``first, first + 1, ...`` of the stacked W into ``a``.

    ``x`` (n_nets, N, fan_in); ``rows_`` (k, fan_in) are the global rows ``first .. first +
    k - 1`` of the weights (n_nets, fan_out, fan_in) flattened to (n_nets * fan_out,
    fan_in); ``a`` (n_nets, N, fan_out).
    """
    fan_out = a.shape[-1]
    r, end = first, first + rows_.shape[0]
    while r < end:
        net, unit = divmod(r, fan_out)
        if unit == 0 and end - r >= fan_out:          # whole networks: one batched product
            k = (end - r) // fan_out
            block = rows_[r - first:r - first + k * fan_out].view(k, fan_out, -1)
            torch.matmul(x[net:net + k], block.transpose(-2, -1), out=a[net:net + k])
            r += k * fan_out
        else:                                         # part of one network
            stop = min(end, (net + 1) * fan_out)
            a[net, :, unit:unit + stop - r] = x[net] @ rows_[r - first:stop - first].T
            r = stop


def _draw_and_apply(x: torch.Tensor, fan_out: int, gen: torch.Generator, keep: bool):
    """(x @ Z^T, Z or None) for standard normal Z (n_nets, fan_out, fan_in), streamed.

    Z is the draw :func:`~eit.sample.laws.standard_normal` would make from ``gen`` (the
    same numbers: :func:`~eit.sample.laws.chunks`); each chunk's complete rows are
    multiplied while the chunk is in the cache, instead of reading the whole stack back
    from memory. With ``keep`` the stack is returned (for the backward pass); without, it is
    never held: the chunks pass through a few reused buffers.
    """
    n_nets, n_in, fan_in = x.shape
    w = torch.empty(n_nets, fan_out, fan_in, dtype=DTYPE) if keep else None
    a = torch.empty(n_nets, n_in, fan_out, dtype=DTYPE)
    carry, done = x.new_empty(0), 0              # a row split between chunks; rows done
    for _, chunk in chunks("normal", n_nets * fan_out * fan_in, gen, out=w):
        off = 0
        if len(carry):
            off = min(fan_in - len(carry), len(chunk))
            carry = torch.cat([carry, chunk[:off]])
            if len(carry) < fan_in:
                continue
            _apply_rows(x, carry.view(1, fan_in), done, a)
            carry, done = carry[:0], done + 1
        k = (len(chunk) - off) // fan_in
        if k:
            _apply_rows(x, chunk[off:off + k * fan_in].view(k, fan_in), done, a)
            done += k
        carry = chunk[off + k * fan_in:].clone()
    return a, w


def _keep_or_state(ctx: _Context, rec: _Record, weights, n_bytes: float, state) -> None:
    if not ctx.backward:
        return
    if n_bytes <= ctx.keep_budget:
        ctx.keep_budget -= n_bytes
        rec.data["weights"] = weights
    else:
        rec.data["state"] = state


def _weights_again(ctx: _Context, rec: _Record, draw: Callable[[], object]):
    if "weights" in rec.data:
        return rec.data["weights"]
    after = ctx.gen.get_state()
    ctx.gen.set_state(rec.data["state"])
    w = draw()
    ctx.gen.set_state(after)
    return w


def _leaf_forward(layer: Layer, h: torch.Tensor, log_r: torch.Tensor, ctx: _Context,
                  tape: list) -> tuple[torch.Tensor, torch.Tensor]:
    rec = _Record(layer)
    name = type(layer).__name__
    if ctx.rule is not None and isinstance(layer, (Dense, WeightNorm, Conv)):
        tape.append(rec)
        return ctx.rule.forward(layer, h, log_r, ctx, rec)
    if isinstance(layer, Dense):
        fan_in = h.shape[-1]
        fan_out = ctx.fan_out(layer, fan_in)
        state = ctx.gen.get_state() if ctx.backward else None
        if layer.bias is None:
            inp, base = h, log_r
        else:
            inp, base = _actual(h, log_r, name, ctx.checks), torch.zeros_like(log_r)
        c = _streamed_std(layer, ctx, fan_out, fan_in)
        if c is None:
            w, c = _draw_dense(layer, ctx, fan_out, fan_in)
            a = torch.matmul(inp, w.transpose(-2, -1))
        else:                       # a large Gaussian layer: rows multiplied as drawn
            n_bytes = 8.0 * ctx.n_nets * fan_out * fan_in
            ctx.memory("n_nets, widths", n_bytes)    # as if drawn whole (never held so)
            keep = ctx.backward and n_bytes <= ctx.keep_budget
            a, w = _draw_and_apply(inp, fan_out, ctx.gen, keep)
        n_bytes = 8.0 * ctx.n_nets * fan_out * fan_in if w is None else w.numel() * w.element_size()
        _keep_or_state(ctx, rec, (w, c), n_bytes, state)
        rec.data.update(log_r_in=log_r, fans=(fan_in, fan_out))
        if ctx.backward and ctx.record & _BATCH_GRADS:
            rec.data["h_in"] = h
        if c != 1.0:
            a = a * c
        if layer.bias is not None:
            a = a + layer.bias(ctx.n_nets, fan_out, ctx.gen).unsqueeze(1)
        a, log_a = _normalize(a, name, ctx.checks)
        tape.append(rec)
        return a, base + log_a
    if isinstance(layer, WeightNorm):
        fan_in = h.shape[-1]
        k = layer.gain_of(fan_in)

        def draw():
            raw = rows(ctx.n_nets, layer.width, fan_in, gen=ctx.gen, law=layer.rows)
            norms = raw.norm(dim=-1)
            return raw / norms.unsqueeze(-1), norms

        state = ctx.gen.get_state() if ctx.backward else None
        w_hat, norms = draw()
        _keep_or_state(ctx, rec, (w_hat, norms), 8.0 * w_hat.numel(), state)
        p = torch.matmul(h, w_hat.transpose(-2, -1))       # w_hat_i . h_unit
        rec.data.update(log_r_in=log_r.clone(), gain=k, draw=draw, p=p if ctx.backward else None)
        a, log_a = _normalize(p, name, ctx.checks)
        tape.append(rec)
        return a, log_r + log_a + math.log(k)
    if isinstance(layer, Conv):
        n_nets, n_in = h.shape[:2]
        c_in, kk = h.shape[2], layer.kernel
        draw = lambda: check_initializer(  # noqa: E731
            "law", layer.law, n_nets, layer.channels, c_in * kk * kk, ctx.gen)
        state = ctx.gen.get_state() if ctx.backward else None
        w = draw().reshape(n_nets * layer.channels, c_in, kk, kk)
        _keep_or_state(ctx, rec, w, 8.0 * w.numel(), state)
        rec.data.update(in_shape=tuple(h.shape), draw=lambda: draw().reshape(w.shape))
        y = _conv(h, w, layer)
        y, log_y = _normalize(y, name, ctx.checks)
        tape.append(rec)
        return y, log_r + log_y
    if isinstance(layer, ReLU):
        if ctx.backward:
            rec.data["mask"] = h > 0
        tape.append(rec)
        y, log_y = _normalize(h.clamp_min(0), name, ctx.checks)
        return y, log_r + log_y
    if isinstance(layer, LeakyReLU):
        positive = h >= 0
        if ctx.backward:
            rec.data["positive"] = positive
        tape.append(rec)
        y, log_y = _normalize(torch.where(positive, h, layer.slope * h), name, ctx.checks)
        return y, log_r + log_y
    if isinstance(layer, Scale):
        tape.append(rec)
        return h, log_r + math.log(layer.gain)
    if isinstance(layer, Activation):
        x = _actual(h, log_r, layer.name, ctx.checks)
        y = layer.fn(x)
        if not isinstance(y, torch.Tensor) or y.shape != x.shape:
            raise ValueError(f"activation {layer.name} must return a tensor of its input's "
                             f"shape {tuple(x.shape)}")
        if ctx.backward:
            rec.data["x"] = x
        if "nonlinearity" in ctx.record:       # ||act(u) - u||_F / ||u||_F per network
            ctx.emit("nonlinearity", (y - x).flatten(1).norm(dim=1) / x.flatten(1).norm(dim=1))
        tape.append(rec)
        return _normalize(y, layer.name, ctx.checks)
    if isinstance(layer, BatchNorm):
        x, m = _relative(h, log_r)
        y, r_f = _batchnorm(x, layer, ctx.checks)
        if ctx.backward:
            rec.data.update(y=y, r_f=r_f, m=m)
        if "isometry_gap" in ctx.record:
            ctx.emit("isometry_gap", isometry_gap(y))
        if "log_bn_jacobian" in ctx.record:
            ctx.emit("log_bn_jacobian", _bn_jacobian_lognorm(r_f, m, layer, x.shape[1]))
        tape.append(rec)
        return _normalize(y, "BatchNorm", ctx.checks)
    raise TypeError(f"the explicit engine has no rule for {type(layer).__name__}")


def _conv(h: torch.Tensor, w: torch.Tensor, layer: Conv) -> torch.Tensor:
    n_nets, n_in, c_in, height, width = h.shape
    x = h.permute(1, 0, 2, 3, 4).reshape(n_in, n_nets * c_in, height, width)
    half = layer.kernel // 2
    if layer.padding == "circular":
        y = F.conv2d(F.pad(x, (half,) * 4, mode="circular"), w, stride=layer.stride,
                     groups=n_nets)
    else:
        y = F.conv2d(x, w, stride=layer.stride, padding=half, groups=n_nets)
    return y.reshape(n_in, n_nets, layer.channels, *y.shape[-2:]).permute(1, 0, 2, 3, 4)


def _batchnorm(x: torch.Tensor, layer: BatchNorm,
               checks: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    if layer.centered:
        x = x - x.mean(dim=1, keepdim=True)
    r_f = x.norm(dim=1, keepdim=True)
    _defer(checks, "batchnorm", "BatchNorm", r_f)
    y = x / r_f
    if layer.standard:
        y = y * math.sqrt(x.shape[1])
    return y, r_f


def _bn_jacobian_lognorm(r_f: torch.Tensor, m: torch.Tensor, layer: BatchNorm,
                         n_in: int) -> torch.Tensor:
    """log ||J_BN(H)||_op per network from the (centred) feature norms ``r_f`` over the batch.

    ``r_f`` (n_nets, 1, *features) are the norms of the features of H exp(-m) (the input
    rescaled by its network's largest norm, ``m`` of shape (n_nets, 1)). The Jacobian is block
    diagonal over the features, with blocks ``s (I - u u^T) P / ||P H_i.||`` (``P`` the
    centring or the identity, ``u`` the unit row, ``s = sqrt(N)`` when standard): norm
    ``s / ||P H_i.||``, or 0 where the blocks vanish (N = 1, or N = 2 when centred).
    """
    if n_in - 1 - int(layer.centered) <= 0:
        return torch.full_like(m[:, 0], -math.inf)
    log_s = 0.5 * math.log(n_in) if layer.standard else 0.0
    return log_s - torch.log(r_f.flatten(1).amin(dim=1)) - m[:, 0]


def _run(layer: Layer, h, log_r, ctx: _Context, tape: list):
    if isinstance(layer, Serial):
        for sub in layer.layers:
            h, log_r = _run(sub, h, log_r, ctx, tape)
        return h, log_r
    if isinstance(layer, Residual):
        rec = _Record(layer)
        branch_tape: list = []
        ctx.stream.append(tuple(h.shape[2:]))
        hb, lb = _run(layer.branch, h, log_r, ctx, branch_tape)
        if layer.shortcut is None:
            hs, ls, short_tape = h, log_r, None
        else:
            short_tape = []
            hs, ls = _run(layer.shortcut, h, log_r, ctx, short_tape)
        ctx.stream.pop()
        lc = math.log(layer.scale) if layer.scale > 0 else -math.inf
        ctx.emit("log_branch", torch.where(torch.isneginf(log_r), log_r, lb + lc - log_r))
        ctx.emit("cos_branch", _inner(hs, hb))
        rec.data.update(branch=branch_tape, shortcut=short_tape)
        tape.append(rec)
        return _combine(hs, ls, hb, lb, layer.scale, ctx.checks)
    return _leaf_forward(layer, h, log_r, ctx, tape)


# ----------------------------------------------------------------------------- backward

def _leaf_backward(rec: _Record, g, log_g, ctx: _Context):
    layer, d = rec.layer, rec.data
    name = type(layer).__name__
    if ctx.rule is not None and isinstance(layer, (Dense, WeightNorm, Conv)):
        return ctx.rule.backward(rec, g, log_g, ctx)
    if isinstance(layer, Dense):
        w, c = _weights_again(ctx, rec, lambda: _draw_dense(layer, ctx, *d["fans"][::-1]))
        ctx.emit("log_delta", log_g)
        ctx.emit("log_grad_w", log_g + d["log_r_in"])
        if "h_in" in d and "log_grad_w_batch" in ctx.record:
            ctx.emit("log_grad_w_batch", _batch_grad(g, log_g, d["h_in"], d["log_r_in"]))
        if "h_in" in d and "log_grad_w_batch_op" in ctx.record:
            ctx.emit("log_grad_w_batch_op",
                     _batch_grad(g, log_g, d["h_in"], d["log_r_in"], spectral=True))
        gin = torch.matmul(g, w)
        gin, lg = _normalize(gin, name, ctx.checks)
        return gin, log_g + lg + math.log(c)
    if isinstance(layer, WeightNorm):
        w_hat, norms = _weights_again(ctx, rec, d["draw"])
        k, log_r = d["gain"], d["log_r_in"]
        ctx.emit("log_delta", log_g)
        ctx.emit("log_grad_w_hat", log_g + log_r + math.log(k))
        c = norms if layer.row_norm is None else torch.full_like(norms, layer.row_norm)
        # eqs. (27)-(28): ||dl/dW_i|| = k |delta_i| ||(I - w_i w_i^T) h|| / ||W_i||
        perp = (1 - d["p"].square()).clamp_min(0)
        sq = (g.square() * perp / c.square().unsqueeze(-2)).sum(-1)
        ctx.emit("log_grad_w", math.log(k) + log_g + log_r + 0.5 * torch.log(sq))
        gin, lg = _normalize(torch.matmul(g, w_hat), name, ctx.checks)
        return gin, log_g + lg + math.log(k)
    if isinstance(layer, Conv):
        w = _weights_again(ctx, rec, d["draw"])
        with torch.enable_grad():
            x = torch.zeros(d["in_shape"], dtype=g.dtype, device=g.device, requires_grad=True)
            (gin,) = torch.autograd.grad(_conv(x, w, layer), x, g)
        gin, lg = _normalize(gin, name, ctx.checks)
        return gin, log_g + lg
    if isinstance(layer, ReLU):
        gin, lg = _normalize(d["mask"] * g, name, ctx.checks)
        return gin, log_g + lg
    if isinstance(layer, LeakyReLU):
        gin, lg = _normalize(torch.where(d["positive"], g, layer.slope * g), name, ctx.checks)
        return gin, log_g + lg
    if isinstance(layer, Scale):
        return g, log_g + math.log(layer.gain)
    if isinstance(layer, Activation):
        x = d["x"]
        if layer.derivative is not None:
            gin = layer.derivative(x) * g
        else:
            with torch.enable_grad():
                xx = x.detach().requires_grad_(True)
                (gin,) = torch.autograd.grad(layer.fn(xx), xx, g)
        gin, lg = _normalize(gin, layer.name, ctx.checks)
        ctx.emit("log_grad_preact", log_g + lg)          # log ||dL/du||, u the pre-activation
        return gin, log_g + lg
    if isinstance(layer, BatchNorm):
        gg, mg = _relative(g, log_g)
        y, r_f = d["y"], d["r_f"]
        if layer.standard:
            gg, y = gg * math.sqrt(y.shape[1]), y / math.sqrt(y.shape[1])
        gx = (gg - y * (gg * y).sum(dim=1, keepdim=True)) / r_f
        if layer.centered:
            gx = gx - gx.mean(dim=1, keepdim=True)
        gin, lg = _normalize(gx, "BatchNorm", ctx.checks)
        return gin, lg + mg - d["m"]
    raise TypeError(f"the explicit engine has no backward rule for {name}")


def _batch_grad(g, log_g, h, log_h, spectral: bool = False) -> torch.Tensor:
    """log ||sum_i delta_i h_i^T|| per network (the gradient of a batch loss).

    The Frobenius norm, or with ``spectral`` the operator (largest singular value) norm.
    """
    s = log_g + log_h
    m = _shift(s)
    weights = torch.exp(s - m)
    grad = torch.matmul((g * weights.unsqueeze(-1)).transpose(-2, -1), h)
    norm = torch.linalg.matrix_norm(grad, ord=2) if spectral else grad.flatten(1).norm(dim=1)
    return torch.log(norm) + m.squeeze(1)


def _run_back(records: list, g, log_g, ctx: _Context):
    for rec in reversed(records):
        layer = rec.layer
        if isinstance(layer, Residual):
            gb, lb = _run_back(rec.data["branch"], g, log_g, ctx)
            if rec.data["shortcut"] is None:
                gs, ls = g, log_g
            else:
                gs, ls = _run_back(rec.data["shortcut"], g, log_g, ctx)
            lc = math.log(layer.scale) if layer.scale > 0 else -math.inf
            ctx.emit("log_branch_grad", torch.where(torch.isneginf(log_g), log_g, lb + lc - log_g))
            ctx.emit("cos_branch_grad", _inner(gs, gb))
            g, log_g = _combine(gs, ls, gb, lb, layer.scale, ctx.checks)
        else:
            g, log_g = _leaf_backward(rec, g, log_g, ctx)
    return g, log_g


def _stack(per_element: list[dict], reverse: bool = False) -> dict[str, torch.Tensor]:
    """One tensor per statistic, rows in element order (NaN where an element lacks it)."""
    rows_ = per_element[::-1] if reverse else per_element
    names: list[str] = []
    for stats in rows_:
        names += [n for n in stats if n not in names]
    out = {}
    for n in names:
        like = next(s[n] for s in rows_ if n in s)
        out[n] = torch.stack([s.get(n, torch.full_like(like, math.nan)) for s in rows_])
    return out


def _collect(emitted: dict, reverse: bool) -> dict:
    """Name the statistics of one element (name, or name[i] for repeated ones)."""
    out = {}
    for name, values in emitted.items():
        values = values[::-1] if reverse else values
        if len(values) == 1:
            out[name] = values[0]
        else:
            out.update({f"{name}[{i}]": val for i, val in enumerate(values)})
    return out


# --------------------------------------------------------------------------------- API

@dataclass
class Pass:
    """A forward pass kept for backward passes: :func:`forward` returns one.

    Attributes
    ----------
    trace : Trace
        The forward trace.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.layers import mlp
    >>> p = forward(mlp([4]), torch.ones(1, 3, dtype=torch.float64), n_nets=2,
    ...             gen=generator(0), backward=True)
    >>> p.trace.depth
    1
    """

    trace: Trace
    _tapes: list
    _ctx: _Context
    _states: dict

    def backward(self, cotangent: str | LossGrad | torch.Tensor = "random", *,
                 top: int | None = None) -> Trace:
        """Propagate a cotangent from the output of element ``top`` (default L) to the input.

        Parameters
        ----------
        cotangent : str, callable or torch.Tensor
            ``'random'``: dL/dh^top standard Gaussian, independent of the networks;
            ``'random_preactivation'``: dL/da standard Gaussian at the input of the last
            element's trailing activation (the delta of Arpit & Bengio's Theorem 2); a loss
            head ``loss_grad(h^top) -> dL/dh^top``; or dL/dh^top itself,
            ``(n_nets, N, *features)``.
        top : int
            The element whose output the loss reads (1 <= top <= L); the network is then the
            first ``top`` elements.

        Returns
        -------
        Trace
            Rows 0..top: ``log_grad`` = log ||dL/dh^l|| and the backward statistics of the
            elements (``log_delta``, ``log_grad_w``, ...), with the forward ones.

        Raises
        ------
        ValueError
            If ``cotangent`` has the wrong shape or ``top`` is out of range.
        """
        depth = len(self._tapes)
        top = depth if top is None else v.positive_int("top", top)
        if top > depth:
            raise ValueError(f"top must be <= the depth {depth}, got {top}")
        if not self._ctx.backward:
            raise ValueError("this pass was run without backward=True")
        if top not in self._states:
            raise ValueError(f"top = {top} was not kept: pass tops=[..., {top}] to forward")
        h, log_r = self._states[top]
        tapes = [list(t) for t in self._tapes[:top]]
        ctx = self._ctx
        ctx.emitted = {}
        if isinstance(cotangent, str):
            if cotangent not in BACKWARDS:
                raise ValueError(f"cotangent must be one of {BACKWARDS}, a loss head or a "
                                 f"tensor, got {cotangent!r}")
            g = standard_normal(*h.shape, gen=ctx.gen)
            if cotangent == "random_preactivation":
                last = tapes[-1]
                if not last or not isinstance(last[-1].layer, (ReLU, LeakyReLU, Activation)):
                    raise ValueError("cotangent 'random_preactivation' needs an element that "
                                     "ends in an activation")
                last.pop()
        else:
            if callable(cotangent):
                g = cotangent(_actual(h, log_r, "loss head"))
                what = "the loss head's result"
            else:
                g, what = cotangent, "cotangent"
            if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(h.shape):
                raise ValueError(f"{what} must be a tensor of the output's shape "
                                 f"{tuple(h.shape)}, got "
                                 f"{tuple(g.shape) if isinstance(g, torch.Tensor) else g!r}")
            if not bool(torch.isfinite(g).all()):
                raise ValueError(f"{what} contains inf or NaN")
            g = g.to(device=h.device, dtype=h.dtype)
        with _checked(ctx.checks):
            g, log_g = _normalize(g, "cotangent", ctx.checks)
            after = ctx.gen.get_state()
            log_grad, stats = [log_g], []
            for records in reversed(tapes):
                ctx.emitted = {}
                g, log_g = _run_back(records, g, log_g, ctx)
                stats.append(_collect(ctx.emitted, reverse=True))
                log_grad.append(log_g)
            ctx.gen.set_state(after)
        fwd = self.trace
        return Trace(fwd.log_h[:top + 1], torch.stack(log_grad[::-1]),
                     {**{k: s[:top] for k, s in fwd.stats.items()}, **_stack(stats, True)},
                     {k: s[:top + 1] for k, s in fwd.observed.items()}, fwd.widths[:top + 1],
                     dict(fwd.meta))


def _names(name: str, value) -> frozenset:
    """A collection of strings (not one string), as a frozenset; else an error naming it."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Collection):
        raise TypeError(f"{name} must be a collection of names, got {type(value).__name__}")
    bad = [x for x in value if not isinstance(x, str)]
    if bad:
        raise TypeError(f"{name} must hold names (str), got {bad[0]!r}")
    return frozenset(value)


def _inputs(x, net: Serial, n_nets: int) -> torch.Tensor:
    nd = net.in_ndim or 1
    x = v.tensor("x", x, ndim=(nd + 1, nd + 2))
    if x.ndim == nd + 1:
        x = x.unsqueeze(0).expand(n_nets, *x.shape)
    elif x.shape[0] != n_nets:
        raise ValueError(f"x has {x.shape[0]} networks on axis 0 but n_nets = {n_nets}")
    return x.to(device=device(), dtype=DTYPE)


def forward(net: Layer, x: torch.Tensor, *, n_nets: int, gen: torch.Generator,
            backward: bool = False, observe: Mapping[str, Observer] | None = None,
            record: Collection[str] = (), tops: Collection[int] | None = None,
            _rule: object | None = None) -> Pass:
    """The forward pass of :func:`trace`, kept for one or several backward passes.

    Parameters are those of :func:`trace`; ``backward=True`` keeps what a backward pass
    needs (ReLU masks, weights or generator states), and the states at the rows ``tops``
    (default: the output) from which :meth:`Pass.backward` may start. Returns a :class:`Pass`.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.layers import mlp
    >>> p = forward(mlp([8, 8, 8]), torch.ones(2, 4, dtype=torch.float64), n_nets=3,
    ...             gen=generator(0), backward=True, tops=[2, 3])
    >>> tuple(p.backward("random", top=2).log_grad.shape)
    (3, 3, 2)
    """
    net = as_serial(net)
    n_nets = v.positive_int("n_nets", n_nets)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator (eit.core.seeds.generator), got "
                        f"{type(gen).__name__}")
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be a bool, got {type(backward).__name__}")
    record = _names("record", record)
    unknown = record - set(OPTIONAL)
    if unknown:
        raise ValueError(f"record must hold names from {OPTIONAL}, got {sorted(unknown)}")
    if observe is not None and not isinstance(observe, Mapping):
        raise TypeError(f"observe must be None or a mapping of names to observers, got "
                        f"{type(observe).__name__}")
    observe = dict(observe or {})
    for name, fn in observe.items():
        if not callable(fn):
            raise TypeError(f"observe[{name!r}] must be callable, got {type(fn).__name__}")
    h = _inputs(x, net, n_nets)
    shapes = net.shapes(tuple(h.shape[2:]))
    widest = max(math.prod(s) for s in shapes)
    v.memory("n_nets, x, widths", 8.0 * 4 * n_nets * h.shape[1] * widest)
    budget = KEEP_FRACTION * v.available_memory() if backward else 0.0
    ctx = _Context(n_nets, gen, backward, record, budget, rule=_rule)
    depth = net.depth
    if tops is not None and (isinstance(tops, (str, bytes))
                             or not isinstance(tops, Collection)):
        raise TypeError(f"tops must be None or a collection of ints, got {type(tops).__name__}")
    tops = {depth} if tops is None else {v.positive_int("tops[i]", t) for t in tops}
    if not tops:
        raise ValueError("tops must name at least one row (or be None: the output)")
    if max(tops) > depth:
        raise ValueError(f"tops must lie in [1, {depth}], got {sorted(tops)}")
    with _checked(ctx.checks):
        h, e = rescaled(h, 2)           # exact; inputs of any finite scale (see scaling)
        h, log_r = _normalize(h, "x", ctx.checks)
        log_r = log_r + e.to(log_r.dtype) * LOG2
        log_h, tapes, stats, states = [log_r], [], [], {}
        seen = {name: [fn(h, log_r)] for name, fn in observe.items()}
        for element in net.layers:
            ctx.emitted = {}
            tape: list = []
            h, log_r = _run(element, h, log_r, ctx, tape)
            stats.append(_collect(ctx.emitted, reverse=False))
            log_h.append(log_r)
            tapes.append(tape)
            if len(tapes) in tops:
                states[len(tapes)] = (h, log_r)
            for name, fn in observe.items():
                seen[name].append(fn(h, log_r))
    result = Trace(torch.stack(log_h), None, _stack(stats),
                   {k: torch.stack(s) for k, s in seen.items()},
                   tuple(math.prod(s) for s in shapes),
                   {"engine": "explicit" if _rule is None else "exact"})
    return Pass(result, tapes, ctx, states)


def _device_inputs(net: Serial, x, n_nets, gen) -> tuple[torch.Tensor, tuple, int]:
    """The checks of :func:`forward` for the device path: (inputs on the device, the
    trace's widths, n_nets); each error names its argument."""
    n_nets = v.positive_int("n_nets", n_nets)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator (eit.core.seeds.generator), got "
                        f"{type(gen).__name__}")
    h = _inputs(x, net, n_nets)
    shapes = net.shapes(tuple(h.shape[2:]))
    v.memory("n_nets, x, widths", 8.0 * 4 * n_nets * h.shape[1] * max(map(math.prod, shapes)))
    for a, b in zip(shapes[:-1], shapes[1:]):
        v.memory("n_nets, widths", 8.0 * n_nets * a[-1] * b[-1])
    return h, tuple(math.prod(s) for s in shapes), n_nets


def _fused_trace(net, x, n_nets, gen, backward, observe, record) -> Trace | None:
    """The device path of a plain ReLU chain (``eit.sample._fused``), where it applies."""
    if not (backward is None or isinstance(backward, str)):
        return None
    net = as_serial(net)
    dense = fused.applies(net, observe=observe, record=record)
    if dense is None:
        return None
    h, widths, _ = _device_inputs(net, x, n_nets, gen)
    keep = KEEP_FRACTION * v.available_memory() if backward is not None else 0.0
    return fused.explicit(dense, h, gen=gen, backward=backward, keep_bytes=keep,
                          widths=widths)


def trace(net: Layer, x: torch.Tensor, *, n_nets: int, gen: torch.Generator,
          backward: str | LossGrad | torch.Tensor | None = None,
          observe: Mapping[str, Observer] | None = None,
          record: Collection[str] = ()) -> Trace:
    """Propagate inputs through ``n_nets`` independent random networks described by ``net``.

    Parameters
    ----------
    net : Layer
        A description (:mod:`eit.sample.layers`); the elements of a top-level
        :class:`~eit.sample.layers.Serial` are the rows of the trace.
    x : torch.Tensor
        Inputs ``(N, *features)`` shared by all networks, or ``(n_nets, N, *features)``;
        finite, floating point.
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator (:func:`eit.core.seeds.generator`).
    backward : None, str, callable or torch.Tensor
        None: forward only. Otherwise the cotangent of :meth:`Pass.backward`: ``'random'``,
        ``'random_preactivation'``, a loss head ``loss_grad(h^L)`` or dL/dh^L itself.
    observe : mapping of str to callable
        Statistics of the state recorded at every row, ``fn(h_unit, log_norm)``.
    record : collection of str
        Optional statistics (:data:`OPTIONAL`): ``isometry_gap`` (batch norm layers),
        ``log_grad_w_batch`` (dense layers: log ||dL/dW||_F of the batch loss, per
        network), ``nonlinearity`` (activations: ||act(u) - u||_F / ||u||_F per network),
        ``log_bn_jacobian`` (batch norm layers: log ||J_BN(H)||_op of the layer at its actual
        input H, per network; ``-log min_i ||H_i.||`` for eq. (4) of Meterez et al. 2024,
        with ``H_i.`` centred when ``centered`` and ``+ log(N)/2`` when ``standard``; -inf
        where the Jacobian vanishes: N = 1, or N = 2 centred), ``log_grad_w_batch_op``
        (dense layers: log ||dL/dW||_op, the spectral norm of the batch loss's gradient).

    Returns
    -------
    Trace
        ``log_h`` of shape ``(L+1, n_nets, N)``, the element statistics ``(L, n_nets, ...)``,
        and with a backward pass ``log_grad`` and ``log_delta``, ``log_grad_w`` etc.

    Raises
    ------
    ValueError, TypeError
        On bad arguments (each names the argument).
    eit.core.validate.AllocationTooLarge
        If a layer's weights or states do not fit in memory.
    FloatingPointError
        If a layer that is not positively homogeneous meets a vector beyond float64.

    References
    ----------
    Arpit & Bengio (2019), eqs. (1), (7) and (9); Hanin & Rolnick (2018), eq. (1); Meterez
    et al. (2024), eq. (4) and Lemma D.7 (the block structure of J_BN).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.layers import mlp
    >>> t = trace(mlp([16] * 5), torch.ones(3, 8, dtype=torch.float64), n_nets=4,
    ...           gen=generator(0), backward="random")
    >>> tuple(t.log_h.shape), tuple(t.log_grad_w.shape)
    ((6, 4, 3), (5, 4, 3))
    """
    if isinstance(backward, str):
        if backward not in BACKWARDS:
            raise ValueError(f"backward (the cotangent) must be None, one of {BACKWARDS}, a "
                             f"loss head or a tensor, got {backward!r}")
    elif not (backward is None or callable(backward) or isinstance(backward, torch.Tensor)):
        raise TypeError(f"backward (the cotangent) must be None, one of {BACKWARDS}, a loss "
                        f"head or a tensor, got {type(backward).__name__}")
    fast = _fused_trace(net, x, n_nets, gen, backward, observe, record)
    if fast is not None:
        return fast
    p = forward(net, x, n_nets=n_nets, gen=gen, backward=backward is not None,
                observe=observe, record=record)
    if backward is None:
        return p.trace
    try:
        return p.backward(backward)
    except ValueError as e:           # the cotangent's errors, under this function's name
        if "backward" in str(e):
            raise
        raise ValueError(f"backward: {e}") from None
