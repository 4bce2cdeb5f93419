"""The device guard: a simulated second device, so that the CPU catches device bugs.

CI has no GPU, and a GPU is at hand only now and then. With ``EIT_DEVICE=sim`` the compute
device (:func:`eit.core.device.device`) is ``eitsim:0``, a device that computes on the CPU but
keeps its tensors apart from the host's, as CUDA does:

* a tensor on ``eitsim`` is a :class:`SimTensor`, a wrapper whose ``device`` is ``eitsim:0``
  and whose values live in a CPU tensor (:attr:`SimTensor.elem`);
* every ATen operation goes through one ``TorchDispatchMode``: an operation whose tensor
  arguments sit on both devices fails with the operation and the two devices named, as CUDA's
  "Expected all tensors to be on the same device" does. Host tensors of zero dimensions (the
  scalars CUDA accepts), copies between devices (``.to``, ``.cpu()``, ``copy_``) and host
  index tensors in advanced indexing (which CUDA moves itself) are allowed;
* factory functions (``torch.zeros(..., device=...)``) create on the device they are given;
  without ``device`` they create on the host, as on CUDA;
* a generator made by :func:`eit.core.seeds.generator` is a :class:`SimGenerator`: a draw
  whose output lives on the other device than its generator fails, as CUDA's "Expected a
  'cpu' device type for generator but found 'cuda'" does (checked by a
  ``TorchFunctionMode``, which sees the Python generator object);
* ``.numpy()`` and NumPy conversions of a device tensor fail, as on CUDA; ``.item()``,
  ``float()`` and ``.tolist()`` work (they synchronize on CUDA) and are counted in
  :data:`SYNCS`.

Limits (what the guard does not catch): the speed of anything; host synchronizations are
counted, not refused; CUDA-only numerics (TF32, non-deterministic reductions, other random
streams: the streams of ``eitsim`` are the CPU's); operations that CUDA implements and the
CPU does not (none in this book); code that asks ``torch.cuda`` directly; and tensors that
leave PyTorch through ``data_ptr`` or DLPack. A process that ran a backward pass on the
simulated device may abort at interpreter exit (autograd's thread for that device is not
joined); its results are complete by then. The values computed are the CPU's, bit for bit.

Enable it with ``EIT_DEVICE=sim`` (``./book test`` runs the library tests and every chapter's
smoke run this way); :func:`enable` is idempotent and is called by
:func:`eit.core.device.device`.
"""

from __future__ import annotations

import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["NAME", "SimTensor", "SimGenerator", "DeviceMixError", "register", "enable",
           "enabled",
           "SYNCS"]

#: The name of the simulated device (PyTorch's PrivateUse1 backend, renamed).
NAME = "eitsim"
#: Host synchronizations seen so far (``.item()``, ``.tolist()``, copies to the host).
SYNCS = {"item": 0, "to_host": 0}

_aten = torch.ops.aten
_CPU = torch.device("cpu")
_COPIES = {_aten.copy_.default, _aten._to_copy.default, _aten.to.dtype_layout,
           _aten._copy_from_and_resize.default, _aten._copy_from.default}
_HOST_INDEX = {_aten.index.Tensor, _aten.index_put_.default, _aten.index_put.default,
               _aten._index_put_impl_.default}
_state = {"enabled": False, "modes": None}
_lock = threading.Lock()


class DeviceMixError(RuntimeError):
    """An operation mixed the simulated device with the host, where CUDA would fail."""


_DEVICE: list[torch.device] = []


def _sim_device() -> torch.device:
    if not _DEVICE:  # made once, after the backend has its name
        _DEVICE.append(torch.device(NAME, 0))
    return _DEVICE[0]


class SimTensor(torch.Tensor):
    """A tensor on the simulated device: its values are the CPU tensor :attr:`elem`."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        if isinstance(elem, SimTensor) or elem.device.type != "cpu":
            raise TypeError(f"elem must be a CPU tensor, got {type(elem).__name__} on "
                            f"{elem.device}")
        out = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, layout=elem.layout, device=_sim_device(),
            requires_grad=elem.requires_grad)
        out.elem = elem
        return out

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self) -> str:  # the CPU values, marked with the device
        return f"{self.elem!r} on {NAME}:0"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


class SimGenerator(torch.Generator):
    """A generator of the simulated device (it draws the CPU's streams)."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return _sim_device()


def _where(t: torch.Tensor) -> str:
    return f"{NAME}:0" if isinstance(t, SimTensor) else str(t.device)


def _describe(func) -> str:
    return getattr(func, "__name__", None) or str(func)


def _is_sim(device) -> bool:
    return device is not None and torch.device(device).type == NAME


def _check_mix(func, tensors: list[torch.Tensor]) -> bool:
    """Whether the operation runs on the simulated device; raise where CUDA would."""
    on_sim = [t for t in tensors if isinstance(t, SimTensor)]
    if not on_sim:
        return False
    host = [t for t in tensors if not isinstance(t, SimTensor) and t.dim() > 0]
    if host and func not in _COPIES:
        raise DeviceMixError(
            f"device guard: {func} mixes tensors on {NAME}:0 (shape "
            f"{tuple(on_sim[0].shape)}) and on {_where(host[0])} (shape "
            f"{tuple(host[0].shape)}); on CUDA this fails with 'Expected all tensors to be "
            f"on the same device'")
    return True


def _tensors(values) -> list[torch.Tensor]:
    """The tensors among ``values`` and one level of lists and tuples in them (ATen's
    arguments are flat but for tensor lists)."""
    out = []
    for a in values:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(t for t in a if isinstance(t, torch.Tensor))
    return out


def _plain(a):
    if isinstance(a, SimTensor):
        return a.elem
    if isinstance(a, (list, tuple)) and any(isinstance(t, SimTensor) for t in a):
        return type(a)(t.elem if isinstance(t, SimTensor) else t for t in a)
    return a


def _dispatch(func, args, kwargs):
    if func in _HOST_INDEX:  # CUDA accepts host index tensors (it moves them itself)
        self_, indices = args[0], args[1]
        tensors = [self_] + _tensors(args[2:]) + _tensors(kwargs.values())
        if isinstance(self_, SimTensor):
            indices = [None if i is None else (i.elem if isinstance(i, SimTensor) else i)
                       for i in indices]
            args = (self_, indices) + tuple(args[2:])
        else:
            tensors += [i for i in indices if isinstance(i, torch.Tensor)]
    else:
        tensors = _tensors(args) + _tensors(kwargs.values()) if kwargs else _tensors(args)
    on_sim = _check_mix(func, tensors)
    device = kwargs.get("device")
    if device is not None:
        on_sim = _is_sim(device)
        if on_sim:
            kwargs = dict(kwargs, device=_CPU)
    if func is _aten._local_scalar_dense.default and tensors and isinstance(tensors[0],
                                                                            SimTensor):
        SYNCS["item"] += 1
    elif (func in _COPIES and not on_sim
          and any(isinstance(t, SimTensor) for t in tensors)):
        SYNCS["to_host"] += 1
    out = func(*[_plain(a) for a in args], **{k: _plain(a) for k, a in kwargs.items()})
    if not on_sim:
        return out
    inputs = {id(t.elem): t for t in tensors if isinstance(t, SimTensor)}

    def wrap(t):  # an input returned (in place, out=) stays the same wrapper
        if not isinstance(t, torch.Tensor):
            return t
        same = inputs.get(id(t))
        return SimTensor(t) if same is None else same

    if isinstance(out, torch.Tensor):
        return wrap(out)
    if isinstance(out, (list, tuple)):
        return type(out)(wrap(t) for t in out) if not hasattr(out, "_fields") else \
            type(out)(*(wrap(t) for t in out))
    return out


class _DispatchMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # never compiled: spare every operation a wrapper
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


def _output_device(args, kwargs) -> torch.device:
    tensors = _tensors(args) + _tensors(kwargs.values())
    if tensors:
        return _sim_device() if isinstance(tensors[0], SimTensor) else tensors[0].device
    return torch.device(kwargs.get("device") or "cpu")


class _FunctionMode(TorchFunctionMode):
    """Checks generators (the Python object is seen here) and serves ``tolist``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        gen = kwargs.get("generator")
        if isinstance(gen, torch.Generator):
            out = _output_device(args, kwargs)
            gen_device = gen.device
            if (out.type == NAME) != (gen_device.type == NAME):
                raise DeviceMixError(
                    f"device guard: {_describe(func)} draws on {out} with a generator on "
                    f"{gen_device}; on CUDA this fails with \"Expected a '{out.type}' device "
                    f"type for generator but found '{gen_device.type}'\"")
        if func in _TO_NUMPY and args and isinstance(args[0], SimTensor):
            raise DeviceMixError(
                f"device guard: {_describe(func)} of a tensor on {NAME}:0 (shape "
                f"{tuple(args[0].shape)}); on CUDA this fails with \"can't convert cuda:0 device "
                f"type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
                f"first\"")
        if func is torch.Tensor.tolist and isinstance(args[0], SimTensor):
            SYNCS["to_host"] += 1
            return args[0].elem.tolist()
        if func in _FROM_DATA:
            return _from_data(func, args, kwargs)
        if func in _ITEM and args and isinstance(args[0], SimTensor):
            args = (args[0], _host_index(args[1])) + tuple(args[2:])
        return func(*args, **kwargs)


def _host_index(index):
    """A list in an index becomes a host tensor, as PyTorch builds it (CUDA moves it itself).

    PyTorch builds the index tensor of ``x[[0, 2]]`` on ``x``'s device with its Python
    dispatch key excluded, out of the guard's sight; a host index is what CUDA receives too.
    """
    if isinstance(index, list):
        return torch.as_tensor(index)
    if isinstance(index, tuple):
        return tuple(torch.as_tensor(i) if isinstance(i, list) else i for i in index)
    return index


_ITEM = {torch.Tensor.__getitem__, torch.Tensor.__setitem__}


def _from_data(func, args, kwargs):
    """``torch.tensor(data, device=...)`` and its kin: built on the host, then moved.

    PyTorch builds these with its Python dispatch key excluded (the modes never see the move
    to the device), so the guard builds them on the host and moves them itself.
    """
    where = kwargs.get("device")
    if func is torch.Tensor.new_tensor and where is None:
        where = args[0].device
    if not _is_sim(where):
        return func(*args, **kwargs)
    kwargs = dict(kwargs, device=_CPU)
    grad = kwargs.pop("requires_grad", False)
    if func is torch.Tensor.new_tensor and isinstance(args[0], SimTensor):
        args = (args[0].elem,) + tuple(args[1:])
    out = func(*args, **kwargs).to(_sim_device())
    return out.requires_grad_() if grad else out


_TO_NUMPY = {torch.Tensor.numpy, torch.Tensor.__array__}
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray, torch.Tensor.new_tensor}


def register() -> None:
    """Register the simulated device with PyTorch (idempotent), without the guard's modes.

    Call it before the first backward pass of the process: autograd sizes its per-device
    queues when it first starts, and a device registered later has no queue there.
    """
    with _lock:
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        if torch._C._get_privateuse1_backend_name() != NAME:
            _setup_privateuseone_for_python_backend(rename=NAME)


def enabled() -> bool:
    """Whether the guard is active in this process."""
    return _state["enabled"]


def enable() -> torch.device:
    """Register the simulated device and activate the guard (idempotent); return the device.

    The guard's modes stay active for the rest of the process (a test process, a chapter's
    kernel): it is meant to be switched on by ``EIT_DEVICE=sim`` before anything is computed.
    """
    register()
    with _lock:
        if not _state["enabled"]:
            function_mode, dispatch_mode = _FunctionMode(), _DispatchMode()
            function_mode.__enter__()
            dispatch_mode.__enter__()
            _state.update(enabled=True, modes=(function_mode, dispatch_mode))
    return _sim_device()
