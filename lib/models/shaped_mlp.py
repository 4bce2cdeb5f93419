"""The trainable shaped BN MLP of Meterez et al. (2024), many independent runs at once.

Section 4 and Appendices G-H of the paper train ``X_{l+1} = act(alpha_l BN(W_l X_l))``
(eq. 11) with standard BN (every feature centred over the mini-batch and scaled to unit
variance, no affine parameters, no epsilon), orthogonal initial weights and a linear read-out.
This module holds ``runs`` such networks as stacked tensors, so that one batched matrix product
per layer serves all of them; each run has its own weights and its own loss, so the runs do not
interact (:func:`eit.train.batched.train` trains them).

Layout: a mini-batch is ``(runs, n, features)`` (one row per sample). The input layer maps the
``n_in`` pixels to the width ``d`` (semi-orthogonal ``W_0``, rows orthonormal), followed by
``depth`` square layers (Haar-orthogonal) and the read-out ``W_out`` (``n_classes x d``,
orthonormal rows). Layer ``l`` (``l = 0..depth``) uses gain ``gains[l]``.

References
----------
A. Meterez et al., "Towards training without depth limits: batch normalization without
gradient explosion", ICLR 2024, eq. (11), Section 4, Appendices G and H.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE
from ..core.scaling import rescaled
from ..sample.laws import haar_orthogonal

__all__ = ["ShapedMLP", "shaped_mlp", "per_run", "power_gains", "weight_gaps", "ACTIVATIONS"]

Activation = Callable[[torch.Tensor], torch.Tensor]

#: The paper's activations (Figure 4): shaped sin and tanh, and the identity.
ACTIVATIONS: dict[str, Activation] = {"sin": torch.sin, "tanh": torch.tanh,
                                      "identity": lambda h: h}


def per_run(activations: Sequence[Activation], runs_each: int) -> Activation:
    """One activation per group of ``runs_each`` consecutive runs (dimension 0), so that runs
    with different non-linearities share one stacked model.

    Examples
    --------
    >>> act = per_run([torch.tanh, lambda h: h], 1)
    >>> h = torch.ones(2, 1)
    >>> torch.equal(act(h), torch.stack([torch.tanh(h[0]), h[1]]))
    True
    """
    if isinstance(activations, (str, bytes)) or not isinstance(activations, Sequence):
        raise TypeError("activations must be a non-empty sequence of callables, got "
                        f"{type(activations).__name__}")
    acts = list(activations)
    if not acts:
        raise ValueError("activations must be a non-empty sequence of callables, got []")
    if not all(callable(a) for a in acts):
        raise TypeError("activations must be a non-empty sequence of callables")
    k = v.positive_int("runs_each", runs_each)

    def act(h: torch.Tensor) -> torch.Tensor:
        if h.shape[0] != k * len(acts):
            raise ValueError(f"expected {k * len(acts)} runs in dimension 0, got {h.shape[0]}")
        return torch.cat([a(h[i * k:(i + 1) * k]) for i, a in enumerate(acts)])

    return act


def power_gains(depth: int, exponent: float) -> list[float]:
    """The shaped gains ``alpha_l = (l + 1)^(-exponent)`` for l = 0..depth (Appendix F).

    Examples
    --------
    >>> power_gains(3, 1.0)
    [1.0, 0.5, 0.3333333333333333, 0.25]
    """
    depth = v.positive_int("depth", depth)
    exponent = v.nonnegative_float("exponent", exponent)
    gains = [(ell + 1) ** -exponent for ell in range(depth + 1)]
    if gains[-1] == 0:
        raise ValueError(f"exponent = {exponent!r} is too large: the gain (depth + 1)^-exponent "
                         "underflows to 0 (the gains must be > 0)")
    return gains


def _bn(h: torch.Tensor) -> torch.Tensor:
    """Standard BN over the samples (dim -2) of ``(runs, n, d)``."""
    c = h - h.mean(dim=-2, keepdim=True)
    return c * torch.rsqrt(c.square().mean(dim=-2, keepdim=True))


class ShapedMLP:
    """``runs`` shaped BN MLPs of one architecture; calling it gives logits (runs, n, classes).

    Attributes
    ----------
    w_in : torch.Tensor
        (runs, d, n_in), the input layer.
    ws : torch.Tensor
        (runs, depth, d, d), the square hidden layers.
    w_out : torch.Tensor
        (runs, n_classes, d), the read-out.
    gains : list of float
        ``alpha_0..alpha_depth``.
    activation : callable
        The element-wise non-linearity.
    """

    def __init__(self, w_in: torch.Tensor, ws: torch.Tensor, w_out: torch.Tensor,
                 gains: Sequence[float], activation: Activation, normalized: bool = True):
        if not callable(activation):
            raise TypeError("activation must be callable")
        depth = ws.shape[1]
        gains = [v.positive_float(f"gains[{i}]", g) for i, g in enumerate(gains)]
        if len(gains) != depth + 1:
            raise ValueError(f"gains must have depth + 1 = {depth + 1} entries, got {len(gains)}")
        self.w_in = w_in.detach().clone().requires_grad_(True)
        self.ws = ws.detach().clone().requires_grad_(True)
        self.w_out = w_out.detach().clone().requires_grad_(True)
        if not isinstance(normalized, bool):
            raise TypeError(f"normalized must be a bool, got {type(normalized).__name__}")
        self.gains = gains
        self.activation = activation
        self.normalized = normalized

    def parameters(self) -> list[torch.Tensor]:
        """``[w_in, ws, w_out]``, each with the run axis first (:func:`eit.train.batched.train`)."""
        return [self.w_in, self.ws, self.w_out]

    @property
    def runs(self) -> int:
        return self.ws.shape[0]

    @property
    def depth(self) -> int:
        return self.ws.shape[1]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 3 or x.shape[0] != self.runs:
            raise ValueError(f"x must have shape (runs={self.runs}, n, n_in), got "
                             f"{tuple(x.shape)}")
        h = self._layer(x @ self.w_in.transpose(-2, -1), 0)
        for ell in range(self.depth):
            h = self._layer(h @ self.ws[:, ell].transpose(-2, -1), ell + 1)
        return h @ self.w_out.transpose(-2, -1)

    def _layer(self, h: torch.Tensor, ell: int) -> torch.Tensor:
        a = self.gains[ell]
        out = self.activation(a * _bn(h))
        return out / a if self.normalized else out


def shaped_mlp(*, runs: int, width: int, depth: int, n_in: int, n_classes: int,
               gains: Sequence[float], activation: Activation, gen: torch.Generator,
               normalized: bool = True, dtype: torch.dtype = DTYPE) -> ShapedMLP:
    """``runs`` independent networks with Haar-orthogonal (semi-orthogonal) initial weights.

    With ``normalized`` (default) a layer outputs ``act(alpha z) / alpha``, the shaped
    activation of deep kernel shaping, which tends to the identity as ``alpha -> 0``;
    otherwise ``act(alpha z)`` as printed in eq. (11). Because every layer's output enters a
    BN, the two differ only in the scale of the last layer's output, i.e. of the logits.
    The weights are drawn in float64 and stored in ``dtype`` (float32 halves the cost of
    training; the inputs are cast to it by :func:`eit.train.batched.train`).
    """
    runs, width = v.positive_int("runs", runs), v.positive_int("width", width)
    depth, n_in = v.positive_int("depth", depth), v.positive_int("n_in", n_in)
    n_classes = v.positive_int("n_classes", n_classes)
    gains = v.real_sequence("gains", gains, positive=True)
    if len(gains) != depth + 1:
        raise ValueError(f"gains must have depth + 1 = {depth + 1} entries, got {len(gains)}")
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    if not isinstance(normalized, bool):
        raise TypeError(f"normalized must be a bool, got {type(normalized).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    gen = v.generator("gen", gen, optional=False)
    w_in = haar_orthogonal(runs, width, n_in, gen=gen)
    ws = haar_orthogonal(runs * depth, width, width, gen=gen).view(runs, depth, width, width)
    w_out = haar_orthogonal(runs, n_classes, width, gen=gen)
    return ShapedMLP(w_in.to(dtype), ws.to(dtype), w_out.to(dtype), gains, activation,
                     normalized)


def weight_gaps(ws: torch.Tensor) -> torch.Tensor:
    """Isometry gap of square weight matrices (..., d, d): log(tr(W^T W)/d) - (2/d) log|det W|.

    Zero exactly for a multiple of an orthogonal matrix (the gap is scale invariant, and so is
    BN: only the rows' directions matter); +inf for a singular matrix. An inf or NaN entry
    gives NaN or inf for its matrix.

    Raises
    ------
    TypeError
        ``ws`` is not a floating-point tensor of square matrices.
    ValueError
        A matrix of ``ws`` is zero (the gap 0/0 is undefined).

    Examples
    --------
    >>> float(weight_gaps(3 * torch.eye(2, dtype=torch.float64)))
    0.0
    """
    if not isinstance(ws, torch.Tensor) or ws.ndim < 2 or ws.shape[-1] != ws.shape[-2] or \
            not ws.is_floating_point():
        raise TypeError("ws must be a floating-point tensor of square matrices (..., d, d)")
    ws, _ = rescaled(ws.detach(), ws.ndim - 2)       # exact: the gap is scale invariant
    if bool((ws == 0).flatten(-2).all(-1).any()):
        raise ValueError("ws has a zero matrix, whose isometry gap (0/0) is undefined")
    d = ws.shape[-1]
    _, logabs = torch.linalg.slogdet(ws)
    return torch.log(ws.square().sum(dim=(-2, -1)) / d) - 2.0 * logabs / d


def gradient_norms(model: ShapedMLP, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of every square layer's loss gradient on one fixed batch, per run.

    Every run sees the same batch; the loss of each run is its mean cross-entropy, so the
    gradient of run r is that of its own loss (the runs do not interact).

    Parameters
    ----------
    model : ShapedMLP
        The stacked networks (:func:`shaped_mlp`).
    x : torch.Tensor
        The batch, shape ``(n, n_in)``.
    y : torch.Tensor
        Its labels, shape ``(n,)`` (integers).

    Returns
    -------
    torch.Tensor
        ``||dL_r / dW_l||_F`` of shape ``(runs, depth)``, in float64.

    References
    ----------
    Meterez et al. (2024), Figure G2 (gradient norms per layer during training).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> m = shaped_mlp(runs=2, width=4, depth=3, n_in=5, n_classes=3,
    ...                gains=power_gains(3, 1.0), activation=torch.tanh, gen=generator(0))
    >>> gradient_norms(m, torch.randn(6, 5, dtype=torch.float64), torch.arange(6) % 3).shape
    torch.Size([2, 3])
    """
    if not isinstance(model, ShapedMLP):
        raise TypeError(f"model must be a ShapedMLP, got {type(model).__name__}")
    x = v.tensor("x", x, ndim=2)
    n_in, n_classes = model.w_in.shape[-1], model.w_out.shape[-2]
    if x.shape[1] != n_in:
        raise ValueError(f"x must have n_in = {n_in} columns, got shape {tuple(x.shape)}")
    if x.shape[0] < 2 or bool((x == x[:1]).all()):
        raise ValueError("x must hold at least two distinct samples (BN over a batch of equal "
                         "samples is undefined)")
    if not isinstance(y, torch.Tensor) or y.shape != x.shape[:1]:
        raise ValueError(f"y must be a tensor of shape ({x.shape[0]},), got "
                         f"{getattr(y, 'shape', type(y).__name__)}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"y must hold integer class labels, got {y.dtype}")
    if bool(((y < 0) | (y >= n_classes)).any()):
        raise ValueError(f"y must hold class labels in [0, {n_classes}), got "
                         f"[{int(y.min())}, {int(y.max())}]")
    # BN follows the first layer, so the loss does not depend on the scale of x: an exact
    # power-of-two rescaling keeps inputs of any scale in range (none for ordinary scales)
    x = rescaled(x[None], 1)[0][0]
    x = x.to(device=model.ws.device, dtype=model.ws.dtype)   # the samples meet the weights
    y = y.to(model.ws.device)
    loss = torch.nn.functional.cross_entropy(model(x.expand(model.runs, *x.shape)).transpose(1, 2),
                                             y.expand(model.runs, -1))
    (g,) = torch.autograd.grad(loss * model.runs, [model.ws])
    return g.flatten(2).norm(dim=2).double()


def random_displacement(moved: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A Gaussian random direction with the Frobenius norm of every matrix of ``moved``.

    The baseline of an implicit bias towards orthogonal matrices: the isometry gap
    (:func:`weight_gaps`) of ``W_0 + moved`` against that of ``W_0 + random_displacement``.

    Parameters
    ----------
    moved : torch.Tensor
        Displacements, shape ``(..., d, d)``.
    gen : torch.Generator
        The random generator (one standard normal per entry, in order).

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``moved``; each matrix has the norm of its counterpart.

    References
    ----------
    Meterez et al. (2024), section 6 and Figure 6 (the comparison this book adds).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> moved = torch.ones(2, 3, 3, dtype=torch.float64)
    >>> r = random_displacement(moved, generator(0))
    >>> torch.allclose(r.flatten(1).norm(dim=1), moved.flatten(1).norm(dim=1))
    True
    """
    if not isinstance(moved, torch.Tensor) or moved.ndim < 2 or not moved.is_floating_point():
        raise TypeError("moved must be a floating-point tensor of matrices (..., d, d)")
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    # the norms of matrices of any scale: exact power-of-two rescaling (none for ordinary ones)
    scaled, e = rescaled(moved, moved.ndim - 2)
    size = scaled.flatten(-2).norm(dim=-1)
    noise = torch.randn(moved.shape, generator=gen, device=gen.device,
                        dtype=moved.dtype).to(moved.device)
    noise *= (size / noise.flatten(-2).norm(dim=-1))[..., None, None]
    half = e.div(2, rounding_mode="floor")[..., None, None]
    return torch.ldexp(torch.ldexp(noise, half.to(noise.dtype)),
                       (e[..., None, None] - half).to(noise.dtype))


__all__ += ["gradient_norms", "random_displacement"]
