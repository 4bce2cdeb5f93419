"""Many weight-normalized networks of one architecture run as one batched network.

The trainable weight-normalized networks of :mod:`eit.models.wn_init` (:class:`WNResNet` for
Table 2, :class:`WNMLP` for Figures 2 and 4 of Arpit, Campos & Bengio 2019) are tiny: a
forward pass of one of them is dominated by per-operation overhead, not by arithmetic.
Stacking ``S`` independent networks (each initialized on its own, by its own generator) along
a leading axis turns ``S`` passes into one pass of batched matrix products. The networks stay
independent: network ``s`` only ever sees its own parameters and inputs, so the gradient of
the *sum* of their losses is the stack of their own gradients, and the Hessian of that sum is
block diagonal, one block per network.

References
----------
Arpit, Campos & Bengio (2019), eq. (1) (weight normalization), Section 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["StackedWNLayer", "StackedWNMLP", "StackedWNResNet", "stack"]


@dataclass
class StackedWNLayer:
    """``S`` weight-normalized affine layers: ``a_s = g_s * (v_s / ||v_s,i||) h_s + b_s``.

    Shapes: ``v`` ``(S, out, in)``, ``g`` and ``b`` ``(S, out)``; inputs ``(S, N, in)``.
    """

    v: torch.Tensor
    g: torch.Tensor
    b: torch.Tensor

    @classmethod
    def stack(cls, layers: Sequence, dtype: torch.dtype | None = None) -> StackedWNLayer:
        """Stack layers with attributes ``v``, ``g``, ``b`` (copies, requiring gradients)."""
        out = cls(*(torch.stack([getattr(la, k).detach() for la in layers]).to(dtype).clone()
                    for k in ("v", "g", "b")))
        for p in out.parameters():
            p.requires_grad_(True)
        return out

    def weight(self) -> torch.Tensor:
        """The effective weights ``g * v / ||v_i||``, shape ``(S, out, in)``."""
        return self.v * (self.g / self.v.norm(dim=-1)).unsqueeze(-1)

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        # bmm, then the bias in place: cheaper than baddbmm's broadcast copy of the bias
        return torch.bmm(h, self.weight().transpose(-2, -1)).add_(self.b.unsqueeze(1))

    def parameters(self) -> list[torch.Tensor]:
        return [self.v, self.g, self.b]

    def select(self, index: torch.Tensor) -> StackedWNLayer:
        """The layers at ``index`` (new leaf tensors requiring gradients)."""
        out = StackedWNLayer(*(p.detach()[index].clone() for p in self.parameters()))
        for p in out.parameters():
            p.requires_grad_(True)
        return out


def _inputs(x: torch.Tensor, s: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.ndim not in (2, 3):
        raise ValueError("x must be a tensor (N, d) shared by the networks or (S, N, d)")
    if x.ndim == 2:
        return x.unsqueeze(0).expand(s, -1, -1)
    if x.shape[0] != s:
        raise ValueError(f"x has {x.shape[0]} stacks for {s} networks")
    return x


@dataclass
class StackedWNResNet:
    """``S`` weight-normalized ResNets (stem, blocks ``h + FC2(ReLU(FC1(h)))``, head)."""

    stem: StackedWNLayer
    blocks: list[tuple[StackedWNLayer, StackedWNLayer]]
    head: StackedWNLayer

    @property
    def size(self) -> int:
        return self.stem.v.shape[0]

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``h^0`` (the stem's output), ..., ``h^B``, each ``(S, N, width)``."""
        h = self.stem(_inputs(x, self.size))
        out = [h]
        for fc1, fc2 in self.blocks:
            h = h + fc2(torch.relu(fc1(h)))
            out.append(h)
        return out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(S, N, d_out)``."""
        return self.head(self.features(x)[-1])

    def parameters(self) -> list[torch.Tensor]:
        layers = [self.stem, *(la for block in self.blocks for la in block), self.head]
        return [p for la in layers for p in la.parameters()]

    def select(self, index: torch.Tensor) -> StackedWNResNet:
        """The networks at ``index``, as a new stack (copies)."""
        return StackedWNResNet(self.stem.select(index),
                               [(a.select(index), b.select(index)) for a, b in self.blocks],
                               self.head.select(index))


@dataclass
class StackedWNMLP:
    """``S`` weight-normalized ReLU MLPs: ``h <- ReLU(layer(h))`` on hidden layers, a linear
    head."""

    hidden: list[StackedWNLayer]
    head: StackedWNLayer

    @property
    def size(self) -> int:
        return self.head.v.shape[0]

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``h^1, ..., h^L`` (after the ReLU), each ``(S, N, width)``."""
        h, out = _inputs(x, self.size), []
        for layer in self.hidden:
            h = torch.relu(layer(h))
            out.append(h)
        return out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(S, N, d_out)``."""
        h = _inputs(x, self.size)
        for layer in self.hidden:
            h = layer(h).relu_()
        return self.head(h)

    def parameters(self) -> list[torch.Tensor]:
        return [p for la in (*self.hidden, self.head) for p in la.parameters()]

    def select(self, index: torch.Tensor) -> StackedWNMLP:
        """The networks at ``index``, as a new stack (copies)."""
        return StackedWNMLP([la.select(index) for la in self.hidden], self.head.select(index))


def stack(nets: Sequence, dtype: torch.dtype | None = None) -> StackedWNResNet | StackedWNMLP:
    """Stack networks of one architecture (all ResNets with ``stem/blocks/head``, or all MLPs
    with ``hidden/head``, of equal shapes) into one batched network.

    Parameters
    ----------
    nets : sequence of WNResNet or WNMLP
        ``S`` networks (:mod:`eit.models.wn_init`); copied, not modified.
    dtype : torch.dtype, optional
        The precision of the stack (default: the networks'); ``torch.float32`` halves the cost
        of training on a CPU.

    Returns
    -------
    StackedWNResNet or StackedWNMLP
        A stacked model for :func:`eit.train.batched.train` (parameters ``(S, ...)``).

    Raises
    ------
    ValueError
        ``nets`` is empty or its networks differ in depth.
    TypeError
        ``nets`` are neither weight-normalized ResNets nor MLPs, or ``dtype`` is not a
        floating-point dtype.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> nets = [wn_mlp_model("proposed", d_in=3, widths=[4, 4], d_out=2, gen=generator(s))
    ...         for s in range(3)]
    >>> x = torch.ones(5, 3, dtype=torch.float64)
    >>> batched = stack(nets)
    >>> bool(torch.allclose(batched(x)[1], nets[1](x)))
    True
    """
    if isinstance(nets, (str, bytes)) or not isinstance(nets, Sequence):
        raise TypeError(f"nets must be a sequence of networks, got {type(nets).__name__}")
    nets = list(nets)
    if not nets:
        raise ValueError("nets must not be empty")
    if dtype is not None and (not isinstance(dtype, torch.dtype) or not dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    lay = lambda layers: StackedWNLayer.stack(layers, dtype)  # noqa: E731
    if all(hasattr(n, "stem") and hasattr(n, "blocks") for n in nets):
        if len({len(n.blocks) for n in nets}) != 1:
            raise ValueError("the ResNets must have the same number of blocks")
        blocks = [(lay([n.blocks[b][0] for n in nets]), lay([n.blocks[b][1] for n in nets]))
                  for b in range(len(nets[0].blocks))]
        return StackedWNResNet(lay([n.stem for n in nets]), blocks, lay([n.head for n in nets]))
    if all(hasattr(n, "hidden") and hasattr(n, "head") for n in nets):
        if len({len(n.hidden) for n in nets}) != 1:
            raise ValueError("the MLPs must have the same depth")
        hidden = [lay([n.hidden[i] for n in nets]) for i in range(len(nets[0].hidden))]
        return StackedWNMLP(hidden, lay([n.head for n in nets]))
    raise TypeError("nets must all be weight-normalized ResNets (stem, blocks, head) or MLPs "
                    "(hidden, head)")
