"""The exact engines: the same layer descriptions, sampled without weight matrices.

For a dense layer with i.i.d. Gaussian weights W ~ N(0, sigma^2) of shape (n_out, n_in) and
inputs H (N x n_in, one row per input), the pre-activations A = H W^T have i.i.d. columns
N(0, sigma^2 H H^T): so a network's forward statistics can be sampled from the N x N Gram
matrix of each layer's input instead of from the weights, at cost O(N^2 (n_in + n_out) + N^3)
per layer instead of O(n_in n_out N) with n_in n_out random numbers. With one input per
network (N = 1) this is the O(n) *vector sampler* ``W h ~ ||h|| N(0, sigma^2 I)``, exact at
every width (Issue 16; Hanin & Rolnick 2018, section 3.1). The backward pass is exact too:
given the forward pass, ``W^T = H^+ A + P Z^T`` with P the projection on the complement of
the rows of H and Z a fresh Gaussian matrix, so ``dL/dH = dA A^T (H H^T)^+ H + R Z' P`` with
``R R^T = sigma^2 dA dA^T``. Gaussian biases enter as a constant input coordinate.

:func:`trace` takes the descriptions of :mod:`eit.sample.layers` and returns the
:class:`~eit.sample.traces.Trace` of the explicit engine (:func:`eit.sample.engine.trace`), in
the same axis order, with the same statistics. Methods:

* ``'conditional'``: the sampler above for any description made of Gaussian :class:`Dense`
  layers (with or without Gaussian biases), activations, scales, batch normalization,
  residual blocks and weight-normalized layers with isotropic or orthogonal rows (forward,
  one input per network); everything except the linear layers is the explicit engine's own
  code, so the two engines cannot drift apart;
* ``'norm'``: the scalar chain for one input through ``Dense(Gaussian) -> ReLU`` layers,
  O(1) per layer: r_l = ||h^l||^2 = (sigma_l^2 r_{l-1} + b_l^2) chi^2_{K_l},
  K_l ~ Binomial(n_l, 1/2), and its backward law (Euler's identity for the homogeneous ReLU
  net makes c = a^l . dL/da^l the same at every layer);
* ``'auto'``: ``'norm'`` where it applies, else ``'conditional'``.

A description with no exact law (a uniform or Haar weight law, a convolution) raises
:class:`NoExactLaw`, naming the layer. Chi-squared numbers are drawn as ``2 Gamma(k/2)`` by
the device's own generator (``torch._standard_gamma``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import LOG2, rescaled
from ..sample import _fused as fused
from ..sample.engine import (
    BACKWARDS,
    LossGrad,
    Observer,
    _actual,
    _device_inputs,
    _gram_root,
    _normalize,
    _shift,
    _view,
    forward,
)
from ..sample.laws import Law, standard_normal
from ..sample.layers import Conv, Dense, Layer, Serial, WeightNorm, as_serial
from ..sample.traces import Trace

METHODS = ("auto", "conditional", "norm")

__all__ = ["METHODS", "NoExactLaw", "chi2", "log_chi2", "trace"]


class NoExactLaw(NotImplementedError):
    """The description holds a layer whose law the exact engines do not know.

    Examples
    --------
    >>> issubclass(NoExactLaw, NotImplementedError)
    True
    """


# ------------------------------------------------------------------------ random numbers

def log_chi2(dof: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """log of chi-squared numbers with ``dof`` degrees of freedom (0 or less gives -inf, NaN
    or -inf gives NaN, +inf gives +inf).

    Drawn as 2 Gamma(dof / 2) by ``gen``'s own device (``torch._standard_gamma``). Where
    ``0 < dof < 2 SMALL_SHAPE`` the Gamma number itself would underflow (the sampler returns
    the smallest normal float instead), so it is drawn in logarithms, ``log Gamma(a) =
    log Gamma(a + 1) + log(U) / a`` with a uniform U (other random numbers than the direct
    draw; only calls with such a ``dof`` take this path, which costs one host check).

    Parameters
    ----------
    dof : torch.Tensor
        Real; any shape.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    torch.Tensor
        float64, the shape of ``dof``, on the compute device.

    Raises
    ------
    TypeError
        If ``dof`` is not a real tensor or ``gen`` not a generator.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> log_chi2(torch.tensor([0.0, 3.0], dtype=torch.float64), generator(0))[0]
    tensor(-inf, dtype=torch.float64)
    """
    _check_dof(dof, gen)
    k = dof.to(device=gen.device, dtype=DTYPE)
    small = (k > 0) & (k < 2 * SMALL_SHAPE)
    if not bool(small.any()):
        return _log_chi2_here(k, gen).to(device())
    a = torch.where(small, k / 2, 1.0)
    log_g = torch.log(torch._standard_gamma(a + 1, generator=gen))
    u = 1 - torch.rand(k.shape, dtype=DTYPE, device=k.device, generator=gen)    # (0, 1]
    tiny = math.log(2.0) + log_g + torch.log(u) / a
    return torch.where(small, tiny, _log_chi2_here(torch.where(small, 1.0, k), gen)
                       ).to(device())


def _check_dof(dof, gen) -> None:
    if not isinstance(dof, torch.Tensor):
        raise TypeError(f"dof must be a torch.Tensor, got {type(dof).__name__}")
    if dof.is_complex() or dof.dtype == torch.bool:
        raise TypeError(f"dof must be a real tensor, got {dof.dtype}")
    v.generator("gen", gen, optional=False)


#: Gamma shapes below this are drawn in logarithms by :func:`log_chi2` (the probability that
#: a Gamma(a) number falls below the smallest normal float is about exp(-708 a))
SMALL_SHAPE = 0.05


def _log_chi2(dof: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """:func:`log_chi2` without checks, for the engines (one draw, no host synchronization);
    on the compute device."""
    return _log_chi2_here(dof.to(device=gen.device, dtype=DTYPE), gen).to(device())


def _log_chi2_here(k: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """The draw of :func:`_log_chi2` for float64 ``k`` on ``gen``'s device, left there."""
    alive = k > 0
    g = torch._standard_gamma(torch.where(alive, k / 2, 1.0), generator=gen)
    # a NaN (or -inf) count of degrees of freedom gives NaN (never a number), on the device
    dead = torch.where((k <= 0) & (k > -math.inf), -math.inf, math.nan)
    return torch.where(alive, math.log(2.0) + torch.log(g), dead)


def chi2(dof: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Chi-squared numbers with ``dof`` degrees of freedom (0 where dof <= 0, NaN where NaN
    or -inf, inf where inf): ``exp`` of :func:`log_chi2`.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> chi2(torch.zeros(2, dtype=torch.float64), generator(0))
    tensor([0., 0.], dtype=torch.float64)
    """
    return torch.exp(log_chi2(dof, gen))


def _binomial(n: int, shape: tuple[int, ...], gen: torch.Generator,
              cache: dict | None = None) -> torch.Tensor:
    """Binomial(n, 1/2) numbers; ``cache`` keeps the (count, 1/2) tensors of each n."""
    key = (n, shape)
    if cache is None or key not in cache:
        count = torch.full(shape, float(n), dtype=DTYPE, device=gen.device)
        args = (count, torch.full_like(count, 0.5))
        if cache is not None:
            cache[key] = args
    else:
        args = cache[key]
    return torch.binomial(*args, generator=gen).to(device())


# --------------------------------------------------------------------- which law applies

def _gaussian(layer: Dense, fan_in: int, fan_out: int) -> float:
    law = layer.law
    if not (isinstance(law, Law) and law.distribution == "normal"):
        raise NoExactLaw(f"Dense(width={layer.width}) with law {law!r}: the exact engines need "
                         "Gaussian weights (a Law with distribution 'normal')")
    return v.positive_float("variance", float(law.rule(fan_in, fan_out)))


def _psd_cholesky(m: torch.Tensor) -> torch.Tensor:
    """Cholesky factors of a stack of positive semi-definite matrices, on the device.

    The factor of ``m`` where it is positive definite; where the factorization fails (a
    singular ``m``: a dead input, linearly dependent inputs), the factor of ``m + eps I``,
    ``eps = 16 n`` machine epsilons of the largest diagonal entry. A zero row of ``m`` gives
    the row ``sqrt(eps) e_i`` (callers zero it or multiply it by a zero right-hand side).
    No host synchronization: both factorizations run for every matrix and are merged on the
    device (``torch.linalg.eigh`` and ``pinv`` check their status on the host).

    Examples
    --------
    >>> m = torch.tensor([[[4.0, 2.0], [2.0, 1.0]]], dtype=torch.float64)
    >>> low = _psd_cholesky(m)
    >>> bool(torch.allclose(low @ low.transpose(-2, -1), m, atol=1e-12))
    True
    """
    low, info = torch.linalg.cholesky_ex(m)
    fi = torch.finfo(m.dtype)
    eps = (16 * m.shape[-1] * fi.eps) * m.diagonal(dim1=-2, dim2=-1).amax(-1)
    reg = m + torch.diag_embed(eps.clamp_min(fi.tiny).unsqueeze(-1).expand(m.shape[:-1]))
    return torch.where((info == 0)[..., None, None], low, torch.linalg.cholesky_ex(reg)[0])


def _psd_root(m: torch.Tensor) -> torch.Tensor:
    """R with R R^T = m for a stack of positive semi-definite matrices, on the device.

    The Cholesky factor (:func:`_psd_cholesky`); the rows of the inputs that are 0 (a zero
    diagonal entry of ``m``) are exactly 0.

    Examples
    --------
    >>> r = _psd_root(torch.tensor([[[4.0, 0.0], [0.0, 0.0]]], dtype=torch.float64))
    >>> bool(r[0, 1].eq(0).all()), round(float(r[0, 0, 0]), 12)
    (True, 2.0)
    """
    live = m.diagonal(dim1=-2, dim2=-1) > 0
    return torch.where(live.unsqueeze(-1), _psd_cholesky(m), 0.0)


def _root(m: torch.Tensor) -> torch.Tensor:
    """R R^T = m: :func:`~eit.sample.engine.gram_root` on the CPU (its values, bit for bit:
    the committed chapters), :func:`_psd_root` on a device (no host synchronization; the
    same factor where the Cholesky factorization succeeds, another root of a singular m).
    Either way the rows of a zero row of m (a dead input) are exactly 0: the eigenvectors
    of a singular m leave rounding noise there, which the next ReLU would read as a sign."""
    if m.device.type != "cpu":
        return _psd_root(m)
    live = m.diagonal(dim1=-2, dim2=-1) > 0
    return torch.where(live.unsqueeze(-1), _gram_root(m), 0.0)


class _Conditional:
    """The conditional Gaussian rule for linear layers (see the module docstring)."""

    def forward(self, layer: Layer, h, log_r, ctx, rec):
        if isinstance(layer, Conv):
            raise NoExactLaw(f"Conv(channels={layer.channels}): a convolution shares its "
                             "weights across pixels; no exact law without its weights")
        if isinstance(layer, WeightNorm):
            return self._weight_norm(layer, h, log_r, ctx)
        fan_in = h.shape[-1]
        fan_out = ctx.fan_out(layer, fan_in)
        s2 = _gaussian(layer, fan_in, fan_out)
        n_nets, n_in = h.shape[:2]
        if layer.bias is None:
            hh, shift = h, log_r
        else:
            c = math.sqrt(layer.bias.variance / s2)
            hh = torch.cat([_actual(h, log_r, "Dense", ctx.checks),
                            torch.full_like(h[..., :1], c)], -1)
            shift = torch.zeros_like(log_r)
        z = standard_normal(n_nets, n_in, fan_out, gen=ctx.gen)
        if n_in == 1 and layer.bias is None:       # the vector sampler: W h ~ ||h|| N(0, s2 I)
            a = z * _view(log_r > -math.inf, z)     # 0 for a dead network (+inf raises)
        elif hh.device.type == "cpu":               # the committed CPU streams
            a = _root(s2 * (hh @ hh.transpose(-2, -1))) @ z
        else:       # H^T = Q R and W Q = sigma z^T: A = sigma R^T z, z kept for the backward
            q, r_factor = torch.linalg.qr(hh.transpose(-2, -1))
            z = z[:, :r_factor.shape[-2]]
            a = math.sqrt(s2) * (r_factor.transpose(-2, -1) @ z)
            if ctx.backward:
                rec.data.update(q=q, z=z)
        a, log_a = _normalize(a, "Dense", ctx.checks)
        if n_in == 1 and layer.bias is None:
            log_a = log_a + 0.5 * math.log(s2)
        if ctx.backward:
            rec.data.update(h=hh, log_r=shift, a=a, log_a=shift + log_a, s2=s2,
                            n_in=fan_in, biased=layer.bias is not None)
        rec.data["log_r_in"] = log_r
        if "log_grad_w_batch" in ctx.record:
            rec.data["h_in"] = h
        return a, shift + log_a

    def _weight_norm(self, layer: WeightNorm, h, log_r, ctx):
        fan_in, width = h.shape[-1], layer.width
        if ctx.backward:
            raise NoExactLaw("WeightNorm: the exact engines have no backward law for "
                             "normalized rows")
        if h.shape[1] != 1:
            raise NoExactLaw("WeightNorm: the exact law needs one input per network")
        isotropic = layer.rows in ("gaussian", "sphere", "student_t")
        if not (isotropic or (layer.rows == "orthogonal" and width <= fan_in)):
            raise NoExactLaw(f"WeightNorm(rows={layer.rows!r}, width={width}, fan_in {fan_in}): "
                             "no exact law (isotropic rows, or orthonormal ones, only)")
        n_nets = h.shape[0]
        z = standard_normal(n_nets, 1, width, gen=ctx.gen)
        if isotropic:       # each row: the first coordinate t of a uniform unit vector
            rest = _log_chi2(torch.full((n_nets, 1, width), fan_in - 1.0, device=z.device),
                            ctx.gen).exp()
            t = z / torch.sqrt(z.square() + rest)
        else:               # W_hat u: the first `width` coordinates of a uniform unit vector
            rest = _log_chi2(torch.full((n_nets, 1, 1), float(fan_in - width), device=z.device),
                            ctx.gen).exp()
            t = z / torch.sqrt(z.square().sum(-1, keepdim=True) + rest)
        t, log_t = _normalize(t, "WeightNorm")
        alive = torch.isfinite(log_r)
        t = torch.where(_view(alive, t), t, torch.zeros_like(t))
        return t, log_r + log_t + math.log(layer.gain_of(fan_in))

    def backward(self, rec, g, log_g, ctx):
        d = rec.data
        hh, ah, s2 = d["h"], d["a"], d["s2"]
        ctx.emit("log_delta", log_g)
        ctx.emit("log_grad_w", log_g + d["log_r_in"])
        if "h_in" in d:
            from ..sample.engine import _batch_grad

            ctx.emit("log_grad_w_batch", _batch_grad(g, log_g, d["h_in"], d["log_r_in"]))
        mg = _shift(log_g)
        g_rel = g * _view(torch.exp(log_g - mg), g)
        z = standard_normal(*hh.shape, gen=ctx.gen)
        if "q" in d:   # a device: W = sigma (z^T Q^T + G (I - Q Q^T)), the forward's z, no solve
            q = d["q"]
            y = _root(s2 * (g_rel @ g_rel.transpose(-2, -1))) @ z              # sigma dA G
            signal = math.sqrt(s2) * (g_rel @ d["z"].transpose(-2, -1))
            gin = (y + (signal - y @ q) @ q.transpose(-2, -1))[..., :d["n_in"]]
            gin, lg = _normalize(gin, "Dense", ctx.checks)
            return gin, mg + lg
        m = torch.zeros_like(_shift(d["log_r"])) if d["biased"] else _shift(d["log_r"])
        h_rel = hh * _view(torch.exp(d["log_r"] - m), hh)
        a_rel = ah * _view(torch.exp(d["log_a"] - m), ah)
        if hh.shape[1] == 1:                    # one input: scalars instead of N x N matrices
            sq = h_rel.square().sum(-1, keepdim=True)
            proj = h_rel / sq.clamp_min(torch.finfo(sq.dtype).tiny)     # 0 where h = 0
            y = math.sqrt(s2) * g_rel.norm(dim=-1, keepdim=True) * z
        else:                                   # (H H^T)^+ H: the committed CPU streams
            gram_inv = torch.linalg.pinv(h_rel @ h_rel.transpose(-2, -1), hermitian=True)
            proj = gram_inv @ h_rel
            y = _root(s2 * (g_rel @ g_rel.transpose(-2, -1))) @ z
        term1 = (g_rel @ a_rel.transpose(-2, -1)) @ proj
        term2 = y - (y @ h_rel.transpose(-2, -1)) @ proj
        gin = (term1 + term2)[..., :d["n_in"]]
        gin, lg = _normalize(gin, "Dense", ctx.checks)
        return gin, mg + lg


# ------------------------------------------------------------------------- norm chain

def _norm_chain(dense: list[Dense], x: torch.Tensor, *, n_nets: int, gen: torch.Generator,
                backward: str | None) -> Trace:
    n0 = x.shape[-1]
    fans = [n0]
    for layer in dense:
        fans.append(fans[-1] if layer.width is None else layer.width)
    if backward is not None and any(layer.bias is not None for layer in dense):
        raise NoExactLaw("the norm chain has no backward law with biases (the net is not "
                         "positively homogeneous): use method='conditional'")
    shape = (n_nets, 1)
    x, e = rescaled(x.flatten(1), 1)       # exact; inputs of any finite scale
    log_norm = torch.log(x.norm(dim=-1)) + e.to(x.dtype) * LOG2
    log_r = 2 * log_norm.view(1, 1).expand(shape).clone()
    if device().type != "cpu" and all(layer.bias is None for layer in dense):
        log_r_all, actives, log_s2 = _norm_chain_at_once(dense, fans, log_r, gen)
    else:
        log_r_all, actives, log_s2 = _norm_chain_layer_by_layer(dense, fans, log_r, gen)
    log_h = 0.5 * torch.stack(log_r_all)
    widths = tuple(fans)
    if backward is None:
        return Trace(log_h, widths=widths, meta={"engine": "exact", "method": "norm"})
    return _norm_chain_backward(log_r_all, actives, log_s2, fans, shape, gen, backward,
                                log_h, widths)


def _norm_chain_layer_by_layer(dense, fans, log_r, gen):
    """(log r_l for l = 0..L, K_l, log sigma_l^2): one layer at a time (the CPU's stream)."""
    shape = tuple(log_r.shape)
    log_r_all, actives, log_s2, cache = [log_r], [], [], {}
    for layer, fan_in, n in zip(dense, fans[:-1], fans[1:], strict=True):
        s2 = _gaussian(layer, fan_in, n)
        pre = log_r + math.log(s2)
        if layer.bias is not None:
            pre = torch.logaddexp(pre, torch.full_like(pre, math.log(layer.bias.variance)))
        k = torch.where(torch.isneginf(pre), 0.0, _binomial(n, shape, gen, cache))
        log_r = pre + _log_chi2(k, gen)
        log_r_all.append(log_r)
        actives.append(k)
        log_s2.append(math.log(s2))
    return log_r_all, actives, log_s2


def _norm_chain_at_once(dense, fans, log_r, gen):
    """:func:`_norm_chain_layer_by_layer` without biases, every layer in one draw (a device).

    K_l ~ Binomial(n_l, 1/2) and chi^2_{K_l} for all layers at once, then a cumulative sum
    of the logarithms: no kernel per layer. A network is dead from the first K_l = 0 on
    (log chi^2_0 = -inf, and -inf plus a number is -inf); its later K_l are set to 0, as the
    layer-by-layer chain sets them. Other random numbers than the CPU's stream, the same law.
    """
    log_s2 = [math.log(_gaussian(layer, a, b))
              for layer, a, b in zip(dense, fans[:-1], fans[1:], strict=True)]
    count = torch.tensor(fans[1:], dtype=DTYPE, device=gen.device).view(-1, 1, 1)
    count = count.expand(len(dense), *log_r.shape)
    k = torch.binomial(count, torch.full_like(count, 0.5), generator=gen).to(device())
    steps = _log_chi2(k, gen) + torch.tensor(log_s2, dtype=DTYPE, device=device()).view(-1, 1, 1)
    log_r_all = torch.cat([log_r.unsqueeze(0), log_r + torch.cumsum(steps, 0)])
    k = torch.where(torch.isneginf(log_r_all[:-1]), 0.0, k)
    return list(log_r_all), list(k), log_s2


def _log_add(*terms: torch.Tensor) -> torch.Tensor:
    out = terms[0]
    for t in terms[1:]:
        out = torch.logaddexp(out, t)
    return out


def _norm_chain_backward(log_r_all, actives, log_s2, fans, shape, gen, backward, log_h,
                         widths) -> Trace:
    depth = len(actives)
    ninf = torch.full(shape, -math.inf, dtype=DTYPE, device=device())
    n_top, k_top = fans[-1], actives[-1]
    z2 = torch.log(standard_normal(*shape, gen=gen).square())
    if backward == "random_preactivation":
        # a^L = W^L h^{L-1}: active part r_L, inactive part s2 r_{L-1} chi2_{n_L - K_L}
        log_a2 = torch.logaddexp(log_r_all[-1], log_r_all[-2] + log_s2[-1]
                                 + _log_chi2(n_top - k_top, gen))
        log_c2 = log_a2 + z2                                 # c = a . delta = ||a|| z
        log_q = torch.logaddexp(z2, _log_chi2(torch.full(shape, n_top - 1.0, device=z2.device),
                                             gen))
        log_top = log_q
    else:                                                    # dL/dh^L ~ N(0, I)
        log_c2 = log_r_all[-1] + z2                          # c = h^L . delta
        log_q = torch.where(k_top > 0, torch.logaddexp(z2, _log_chi2(k_top - 1, gen)), ninf)
        log_top = _log_add(log_q, _log_chi2(n_top - k_top, gen))
    log_q_all, log_grad = [log_q], [log_top]
    for l in range(depth - 1, -1, -1):       # from q_{l+1} (layer l+1) to row l
        k = actives[l - 1] if l > 0 else None
        base = log_s2[l] + log_q
        signal = torch.where(torch.isneginf(log_r_all[l]), ninf, log_c2 - log_r_all[l])
        if l > 0:
            act = _log_chi2(k - 1, gen)
            inact = _log_chi2(fans[l] - k, gen)
            log_q = torch.where(k > 0, _log_add(signal, base + act), ninf)
            log_q_all.append(log_q)
            log_grad.append(_log_add(signal, base + act, base + inact))
        else:                                # P_perp(x) has rank n_0 - 1 (n_0 if x = 0)
            dof = torch.where(torch.isneginf(log_r_all[0]), fans[0], fans[0] - 1.0)
            log_grad.append(_log_add(signal, base + _log_chi2(dof, gen)))
    log_delta = 0.5 * torch.stack(log_q_all[::-1])
    stats = {"log_delta": log_delta, "log_grad_w": log_delta + log_h[:-1]}
    return Trace(log_h, 0.5 * torch.stack(log_grad[::-1]), stats, widths=widths,
                 meta={"engine": "exact", "method": "norm"})


# ------------------------------------------------------------------------------- API

def _check(net: Serial) -> None:
    for leaf in net.leaves():
        stack = [leaf]
        while stack:
            layer = stack.pop()
            if isinstance(layer, Conv):
                raise NoExactLaw(f"Conv(channels={layer.channels}): no exact law")
            if isinstance(layer, Dense) and not (isinstance(layer.law, Law)
                                                 and layer.law.distribution == "normal"):
                raise NoExactLaw(f"Dense(width={layer.width}) with law {layer.law!r}: the exact "
                                 "engines need Gaussian weights")
            for sub in ("branch", "shortcut", "layers"):
                child = getattr(layer, sub, None)
                if isinstance(child, Layer):
                    stack.append(child)
                elif isinstance(child, tuple):
                    stack.extend(child)


def _check_options(backward, observe, record) -> None:
    """The optional arguments of :func:`trace`: their types, each error naming its argument."""
    if isinstance(backward, str):
        v.choice("backward", backward, BACKWARDS)
    elif not (backward is None or isinstance(backward, torch.Tensor) or callable(backward)):
        raise TypeError(f"backward must be None, one of {BACKWARDS}, a loss gradient (callable) "
                        f"or a tensor, got {type(backward).__name__}")
    if observe is not None:
        if not isinstance(observe, Mapping):
            raise TypeError(f"observe must be a mapping of names to observers, got "
                            f"{type(observe).__name__}")
        for name, fn in observe.items():
            if not isinstance(name, str) or not callable(fn):
                raise TypeError(f"observe must map names (str) to callables, got {name!r}: "
                                f"{type(fn).__name__}")
    if isinstance(record, (str, bytes)) or not isinstance(record, Collection) or not all(
            isinstance(r, str) for r in record):
        raise TypeError(f"record must be a collection of names (str), got {record!r}")


def trace(net: Layer, x: torch.Tensor, *, n_nets: int, gen: torch.Generator,
          backward: str | LossGrad | torch.Tensor | None = None, method: str = "auto",
          observe: Mapping[str, Observer] | None = None,
          record: Collection[str] = ()) -> Trace:
    """Sample the :class:`~eit.sample.traces.Trace` of ``net`` exactly, without weights.

    Same parameters and result as :func:`eit.sample.engine.trace`, plus ``method``
    (:data:`METHODS`). The law of the result is that of the explicit engine; the random
    numbers are others.

    Parameters
    ----------
    net : Layer
        A description of Gaussian dense layers, activations, scales, batch norms, residual
        blocks (and weight-normalized layers, forward, one input).
    x : torch.Tensor
        ``(N, n_0)`` or ``(n_nets, N, n_0)``; ``method='norm'`` needs N = 1.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    backward : None, str, callable or torch.Tensor
        As in :func:`eit.sample.engine.trace`; ``'norm'`` takes ``'random'`` or
        ``'random_preactivation'`` only.
    method : str
        ``'auto'``, ``'conditional'`` or ``'norm'``.
    observe, record
        As in :func:`eit.sample.engine.trace` (``'conditional'`` only).

    Returns
    -------
    Trace
        ``meta['method']`` says which engine ran.

    Raises
    ------
    NoExactLaw
        If a layer has no exact law (naming it), or the method does not fit the description.
    ValueError, TypeError
        On bad arguments.

    References
    ----------
    Hanin & Rolnick (2018), section 3.1 (the pre-activations given the previous layer);
    Arpit & Bengio (2019), Theorem 2 (the backward law with a random delta).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.layers import mlp
    >>> t = trace(mlp([64] * 100), torch.ones(1, 64, dtype=torch.float64), n_nets=5,
    ...           gen=generator(0), backward="random_preactivation")
    >>> t.meta["method"], tuple(t.log_grad_w.shape)
    ('norm', (100, 5, 1))
    """
    net = as_serial(net)
    method = v.choice("method", method, METHODS)
    n_nets = v.positive_int("n_nets", n_nets)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator (eit.core.seeds.generator), got "
                        f"{type(gen).__name__}")
    _check_options(backward, observe, record)
    nd = net.in_ndim or 1
    xs = v.tensor("x", x, ndim=(nd + 1, nd + 2))
    _check(net)
    dense = fused.chain(net)
    one_input = nd == 1 and xs.shape[-2] == 1 and (xs.ndim == 2 or xs.shape[0] == 1)
    norm_ok = (dense is not None and one_input and not observe and not record
               and (backward is None or (isinstance(backward, str) and backward in BACKWARDS)))
    if method == "norm" and not norm_ok:
        raise NoExactLaw("method 'norm' needs one input (shared by the networks) and a chain "
                         "of Dense(Gaussian) -> ReLU elements, backward None, 'random' or "
                         "'random_preactivation', no observe or record")
    if method == "norm" or (method == "auto" and norm_ok):
        net.out_shape((xs.shape[-1],))
        return _norm_chain(dense, xs.reshape(1, -1).to(device=device(), dtype=DTYPE),
                           n_nets=n_nets, gen=gen, backward=backward)
    plain = fused.applies(net, observe=observe, record=record)
    if plain is not None and (backward is None or isinstance(backward, str)):
        h, widths, _ = _device_inputs(net, x, n_nets, gen)          # the device path
        return fused.conditional(plain, h, gen=gen, backward=backward, widths=widths)
    p = forward(net, x, n_nets=n_nets, gen=gen, backward=backward is not None,
                observe=observe, record=record, _rule=_Conditional())
    out = p.trace if backward is None else p.backward(backward)
    return out.with_meta(engine="exact", method="conditional")
