"""Count ATen operations and host synchronizations: what a GPU would launch, checked on a CPU.

On a GPU an engine is fast when it is bound by arithmetic and memory, not by kernel launches
or by waits of the host for the device (DESIGN.md section 5). Both can be counted on any
device: every ATen operation that reaches the dispatcher is (at most) one kernel launch, and
the operations that return data to the host, or whose output shape depends on the data,
make the host wait for the device. :func:`count_ops` records them with a
:class:`torch.utils._python_dispatch.TorchDispatchMode`, so a CPU test can check that a
layer loop neither waits for the device nor launches more kernels than it needs.

What is counted:

* ``ops``: every ATen operation the dispatcher sends to the mode (after autograd and
  ``torch.func.vmap``, so a vmapped function is counted as its batched operations), by name;
* ``launches``: the operations that run a kernel: all but views (``func.is_view``) and the
  operations that only allocate or alias (:data:`NO_KERNEL`);
* ``syncs``: host synchronizations, by reason:

  - ``aten._local_scalar_dense``: ``.item()``, ``float()``, ``int()``, ``bool()`` of a
    tensor (``if tensor.any():`` included);
  - operations whose output shape depends on the data (:data:`DATA_DEPENDENT`:
    ``nonzero``, ``masked_select``, ``unique``, ``repeat_interleave`` without
    ``output_size``, ...), and indexing with a boolean mask (``x[mask]``, ``x[mask] = y``);
  - operations that check a LAPACK status on the host (:data:`CHECKS_ON_HOST`:
    ``eigh``, ``svd``, ``pinv``, ``lstsq``, ..., and the ``*_ex`` factorizations called with
    ``check_errors=True``);
  - copies between the host and a device (``.cpu()``, ``.to('cpu')``, ``.to('cuda')`` of a
    host tensor: a blocking copy waits for the stream);
  - ``.tolist()``, ``.numpy()`` (and ``numpy.asarray``) and ``.cpu()`` of a tensor that is
    on the CPU: they do not reach the dispatcher, and on a CPU run the tensors an engine
    computes are on the CPU; on a GPU the same calls are device-to-host copies. They are
    counted by wrapping those three methods of :class:`torch.Tensor` for the duration.

Operations run inside a kernel (the eigendecomposition that ``pinv`` calls, the ``nonzero``
of a boolean index) are not dispatched again, which is why the callers above are named.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .validate import widths

__all__ = ["CHECKS_ON_HOST", "DATA_DEPENDENT", "NO_KERNEL", "OpCounts", "count_ops",
           "per_layer"]

#: Operations that only allocate, alias or detach: no kernel runs.
NO_KERNEL = frozenset({
    "aten.empty", "aten.empty_like", "aten.empty_strided", "aten.new_empty",
    "aten.new_empty_strided", "aten.detach", "aten.alias", "aten.lift_fresh",
    "aten.resize_", "aten.set_", "aten._reshape_alias", "aten._unsafe_view",
})

#: Operations whose output shape depends on the values: the host waits for the device.
DATA_DEPENDENT = frozenset({
    "aten.nonzero", "aten.masked_select", "aten._unique", "aten._unique2",
    "aten.unique_dim", "aten.unique_consecutive", "aten.unique_dim_consecutive",
    "aten.bincount", "aten.argwhere",
})

#: Operations that read a LAPACK/cuSOLVER status on the host (always).
CHECKS_ON_HOST = frozenset({
    "aten._linalg_eigh", "aten._linalg_svd", "aten.linalg_pinv", "aten.linalg_matrix_rank",
    "aten.linalg_eig", "aten.linalg_lstsq", "aten.cholesky", "aten._linalg_check_errors",
    "aten.equal", "aten.allclose",
})

#: Factorizations with a ``check_errors`` argument: a host check when it is True.
_CHECK_ERRORS = {
    "aten.linalg_cholesky_ex": 2, "aten.linalg_inv_ex": 1, "aten.linalg_lu_factor_ex": 2,
    "aten.linalg_lu": 2, "aten.linalg_ldl_factor_ex": 2, "aten.linalg_solve_ex": 3,
    "aten._linalg_solve_ex": 3,
}

_INDEXING = frozenset({"aten.index", "aten.index_put", "aten.index_put_",
                       "aten._index_put_impl_", "aten._unsafe_index"})
_COPIES = frozenset({"aten._to_copy", "aten.copy_", "aten._copy_from", "aten.to"})


@dataclass
class OpCounts:
    """The operations and host synchronizations counted by ``count_ops``.

    Attributes
    ----------
    ops : collections.Counter
        ATen operation (``'aten.mm'``) -> how many times it ran.
    syncs : collections.Counter
        Reason (``'aten._local_scalar_dense'``, ``'boolean mask: aten.index'``,
        ``'copy to the host'``, ``'Tensor.tolist'``, ...) -> how many times.

    Examples
    --------
    >>> c = OpCounts(Counter({"aten.mm": 2, "aten.view": 1}), Counter({"x": 1}))
    >>> c.total, c.launches, c.n_syncs
    (3, 2, 1)
    """

    ops: Counter = field(default_factory=Counter)
    syncs: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """Every operation, views included."""
        return sum(self.ops.values())

    @property
    def launches(self) -> int:
        """The operations that run a kernel (not views, not allocations)."""
        return sum(self.kernels().values())

    @property
    def n_syncs(self) -> int:
        """All host synchronizations."""
        return sum(self.syncs.values())

    def kernels(self) -> Counter:
        """The launches by operation."""
        return Counter({op: n for op, n in self.ops.items()
                        if op not in NO_KERNEL and not _is_view(op)})


@functools.cache
def _is_view(name: str) -> bool:
    """Whether the ATen operation ``'aten.name'`` returns a view (of any overload)."""
    namespace, _, op = name.partition(".")
    packet = getattr(getattr(torch.ops, namespace, None), op, None)
    if packet is None or not hasattr(packet, "overloads"):
        return False
    return any(getattr(packet, o).is_view for o in packet.overloads())


def _is_mask(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8)


def _device(x) -> torch.device | None:
    if isinstance(x, torch.device):
        return x
    if isinstance(x, str):
        return torch.device(x)
    return None


def _sync_reason(name: str, args: tuple, kwargs: dict) -> str | None:
    """Why the operation ``name`` with these arguments makes the host wait (None if not)."""
    if name in ("aten._local_scalar_dense", "aten.item"):
        return "aten._local_scalar_dense"
    if name in DATA_DEPENDENT:
        return f"data-dependent shape: {name}"
    if name in CHECKS_ON_HOST:
        return f"status checked on the host: {name}"
    if name in _CHECK_ERRORS:
        position = _CHECK_ERRORS[name]
        check = kwargs.get("check_errors", args[position] if len(args) > position else False)
        return f"status checked on the host: {name}" if check else None
    if name == "aten.repeat_interleave":
        if kwargs.get("output_size") is None and isinstance(args[0], torch.Tensor) and (
                len(args) > 1 and isinstance(args[1], torch.Tensor) or args[0].dtype in (
                    torch.int32, torch.int64) and len(args) == 1):
            return f"data-dependent shape: {name}"
        return None
    if name == "aten.one_hot":
        classes = kwargs.get("num_classes", args[1] if len(args) > 1 else -1)
        return f"data-dependent shape: {name}" if classes == -1 else None
    if name in _INDEXING:
        indices = kwargs.get("indices", args[1] if len(args) > 1 else ())
        if any(_is_mask(i) for i in (indices or ()) if i is not None):
            return f"boolean mask: {name}"
        return None
    if name in _COPIES:
        src = args[0] if name != "aten.copy_" else (args[1] if len(args) > 1 else None)
        if not isinstance(src, torch.Tensor):
            return None
        if name == "aten.copy_":
            dst = args[0].device
        elif name == "aten._copy_from":
            dst = args[1].device if len(args) > 1 else None
        else:
            dst = _device(kwargs.get("device")) or next(
                (d for a in args[1:] if (d := _device(a)) is not None), None)
        if dst is None or (dst.type == "cpu") == (src.device.type == "cpu"):
            return None
        if kwargs.get("non_blocking") and dst.type != "cpu":
            return None
        return "copy to the host" if dst.type == "cpu" else "blocking copy to the device"
    return None


class _Counter(TorchDispatchMode):
    def __init__(self, counts: OpCounts):
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket)
        self.counts.ops[name] += 1
        reason = _sync_reason(name, args, kwargs)
        if reason is not None:
            self.counts.syncs[reason] += 1
        return func(*args, **kwargs)


def _wrap_host_reads(counts: OpCounts) -> Callable[[], None]:
    """Wrap ``Tensor.tolist``, ``Tensor.numpy`` and ``Tensor.cpu``; return the undo."""
    saved = {name: getattr(torch.Tensor, name) for name in ("tolist", "numpy", "cpu")}

    inside = threading.local()       # a wrapped read calling another (a torch function
                                     # mode re-dispatching it) is counted once

    def wrapper(name, method):
        def counted(self, *args, **kwargs):
            if getattr(inside, "depth", 0) == 0 and self.device.type == "cpu":
                counts.syncs[f"Tensor.{name}"] += 1
            inside.depth = getattr(inside, "depth", 0) + 1
            try:
                return method(self, *args, **kwargs)
            finally:
                inside.depth -= 1
        counted.__name__ = name
        counted.__doc__ = method.__doc__
        return counted

    for name, method in saved.items():
        setattr(torch.Tensor, name, wrapper(name, method))

    def undo() -> None:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)

    return undo


@contextlib.contextmanager
def count_ops() -> Iterator[OpCounts]:
    """Count the ATen operations and host synchronizations of the code inside the block.

    Yields
    ------
    OpCounts
        Filled as the block runs (``ops``, ``syncs``; ``total``, ``launches``, ``n_syncs``).

    Examples
    --------
    >>> x = torch.arange(6.0)
    >>> with count_ops() as c:
    ...     y = (x * 2).view(2, 3).sum(dim=1)
    ...     big = bool((y > 5).any())
    ...     picked = x[x > 2]
    ...     values = y.tolist()
    >>> c.ops["aten.mul"], c.launches, c.total
    (1, 7, 8)
    >>> sorted(c.syncs.items())
    [('Tensor.tolist', 1), ('aten._local_scalar_dense', 1), ('boolean mask: aten.index', 1)]
    """
    counts = OpCounts()
    undo = _wrap_host_reads(counts)
    try:
        with _Counter(counts):
            yield counts
    finally:
        undo()


def per_layer(run: Callable[[int], object], depths: Sequence[int] = (4, 8)) -> dict:
    """Operations per layer: the counts of ``run(depth)`` at two depths, differenced.

    ``run(depth)`` builds and runs a network of that depth (everything else fixed); the
    difference of the counts at the two depths over the difference of the depths is the
    cost of one more layer, free of the fixed costs of a call (validation, inputs, the
    result). ``run`` is called once at each depth beforehand, untimed and uncounted, so that
    first-call work (caches, lazy imports) is not counted.

    Returns
    -------
    dict
        ``launches``, ``total``, ``syncs`` per layer (floats), the two ``counts``
        (:class:`OpCounts`), and ``kernels``: the per-layer launches by operation.

    Examples
    --------
    >>> def run(depth):
    ...     h = torch.ones(3)
    ...     for _ in range(depth):
    ...         h = torch.relu(h * 2)
    ...         if bool(h.isnan().any()):
    ...             raise FloatingPointError
    >>> cost = per_layer(run)
    >>> cost["launches"], cost["syncs"]
    (5.0, 1.0)
    """
    if not callable(run):
        raise TypeError(f"run must be callable (run(depth)), got {type(run).__name__}")
    if isinstance(depths, (str, bytes)) or not isinstance(depths, Sequence) \
            or len(depths) != 2:
        raise ValueError(f"depths must be two increasing positive depths, got {depths!r}")
    lo, hi = widths("depths", depths)
    if not lo < hi:
        raise ValueError(f"depths must be two increasing positive depths, got {depths!r}")
    for depth in (lo, hi):
        run(depth)
    counts = []
    for depth in (lo, hi):
        with count_ops() as c:
            run(depth)
        counts.append(c)
    a, b = counts
    span = hi - lo
    kernels = b.kernels()
    kernels.subtract(a.kernels())
    return {"launches": (b.launches - a.launches) / span, "total": (b.total - a.total) / span,
            "syncs": (b.n_syncs - a.n_syncs) / span, "counts": (a, b),
            "kernels": {op: n / span for op, n in sorted(kernels.items()) if n}}
