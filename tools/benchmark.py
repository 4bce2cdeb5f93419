"""Benchmark: the explicit paths a user would write, the library's, and its exact engines.

    python tools/benchmark.py [--out PATH] [--quick] [--repeats R]
    python tools/benchmark.py --device cuda [--out PATH] [--quick] [--repeats R]
                              [--max-seconds S]
    python tools/benchmark.py --register PATH      # a file copied from another machine

Two modes. Without ``--device`` (the CPU mode): CPU time on one thread, the sizes below,
``data/benchmarks/cpu.json``. With ``--device cuda`` (or ``--device cpu`` for a sanity run of
the same code path): wall time, larger batches, achieved FLOP/s and bytes/s against the
device's peak, a time budget; ``data/benchmarks/cuda.json`` (``cpu`` writes
``_build/benchmarks/wall-cpu.json``). See "The device mode" below.

Every method computes the same statistics of ``n_nets`` independent He-initialized ReLU
networks (zero biases, float64): the per-layer, per-input norms ``log ||h^l||`` and, for the
Arpit & Bengio workload, ``log ||dloss/dW^l||_F`` with a standard Gaussian ``dloss/da^L``.

Methods:

* ``lean_loop``: a plain-tensor loop over networks, as a user would write it (``torch.randn``
  weights times ``sqrt(2/fan_in)``, matmul, relu; the gradient with respect to ``W^l`` is
  ``outer(delta^l, h^{l-1})``, so its norm is ``||delta^l|| ||h^{l-1}||``, computed by hand
  backward without autograd);
* ``vmap``: ``torch.func.vmap(one_network, randomness="different")`` over the same
  one-network function;
* ``batched``: the library's explicit batched path, :func:`eit.sample.mlps.relu_mlp`;
* ``exact``: the library's exact engines (:func:`eit.exact.engine.trace`, which picks the
  norm chain for one input per network; :func:`eit.exact.chains.gram_chain` for N inputs,
  forward; the conditional Gaussian sampler with its backward law for the Arpit & Bengio
  workload); ``exact_vector``: the O(n) vector sampler (``method="conditional"``) for one
  input;
* ``rng``: the generator limit, drawing exactly the float64 normals the explicit path draws,
  in the same blocks (one ``torch.randn`` per layer of all networks, and the deltas), each
  into fresh memory;
* ``rng_stream``: the generator's own rate: the same normals drawn as the library's stream
  draws them (chunks of ``laws.CHUNK`` numbers for a block of at least
  ``laws.PARALLEL_MIN``, one call below) into a few reused buffers, held nowhere. It is the
  stricter limit: ``rng`` also pays the first touch of fresh pages (the kernel zeroes them),
  which a forward-only batched pass, multiplying each chunk while it is in the cache, never
  allocates.

Workloads: ``hr18`` (Hanin & Rolnick 2018, Fig. 1a: depth = width = d, one input per
network), ``ab19`` (Arpit & Bengio 2019, Figs. 1-2: depth 10, N inputs in R^500, forward and
backward), ``gram`` (N inputs in R^2000, width 2000, depth 10, forward).

Protocol: one thread (``torch.set_num_threads(1)``), CPU time of this process
(``time.process_time``: the machine may be shared, so wall time would measure the neighbours
too), one untimed warm-up call of every method at the first size of each workload, then at
every size one untimed calibration call of every method, then ``repeats`` rounds of
interleaved calls (A, B, C, A, B, C, ...), the same number per method. A repeat of a method
whose calibration call took less than :data:`MIN_REPEAT_S` of CPU time times ``calls``
consecutive calls, enough to fill it, and records their mean: a call of a few milliseconds
(the exact engines) is otherwise measured at the scale of the scheduler's noise (its repeats
varied by a factor 2 in one run of 10 rounds).
Every (workload, size, method) row keeps all per-repeat times, their median and the count of
random numbers drawn (normals, counted from the library's draws for its own methods and
checked against the explicit count). The result goes to ``data/benchmarks/cpu.json`` with
provenance, and its line of ``data/SHA256SUMS`` is updated.

The device mode (``--device cuda``)
-----------------------------------
The same methods and workloads on the device (``EIT_DEVICE`` is set to it, so the library
and the generators live there), at the sizes of :data:`DEVICE`: those of the CPU file plus
larger batches (10,000 networks for ``hr18``; 256 networks, and 2000 inputs, for ``ab19``;
64 networks, and 2000 inputs at the paper's width 4060, for ``gram``). Protocol: wall time
(``time.perf_counter``) between
two ``torch.cuda.synchronize()``; at every size one untimed warm-up call of every method
(which also counts the method's random draws), then up to ``repeats`` interleaved rounds;
the row keeps every repeat and their median. ``lean_loop`` runs only where nets x depth <=
:data:`LEAN_MAX` (beyond, one launch per layer and network takes minutes); the exact engines
of ``ab19`` and ``gram`` only where N < n (from N = n on, the Gram matrices of the deeper
layers are singular in float64, and the conditional sampler falls back to
eigendecompositions); ``rng_stream`` only on a CPU generator (``laws.chunks`` is the CPU
stream).

Every row adds ``flops`` and ``bytes`` (the work model below), the achieved ``flop_s`` and
``byte_s`` (over the median), their fractions ``flop_fraction`` and ``byte_fraction`` of
the device's peak (:func:`peak`: float64 tensor-core FLOP/s and memory bandwidth from a
table of known devices, recorded in the file), and ``generator_fraction``: the time the
generator needs for the method's own normals at the rate of the ``rng`` row of the same
size, over the method's time (1 for a method that only draws).

The budget (``--max-seconds``, default 170, counted from the start of the process): before
a method's warm-up at a size, its time is predicted from its median at the previous size of
the workload scaled by the ratio of the work models (at least 1); a call predicted to end
past the deadline is skipped, and so is every later size of that method in the workload.
Rounds of repeats stop when the next round (the last measured times) would pass the
deadline. A method that fails (out of memory included) is skipped at that size. Every skip
is listed with its reason under ``budget.skipped``; ``budget.complete`` says whether
everything ran. The file is rewritten after every size, so a run cut short leaves what it
measured.

The work model (float64, 8 bytes a number; B networks, N inputs, f_0 = n0 and f_l = width
the layer widths, L the depth; the essential work of each method, what any implementation
of it must do, so that FLOP/s is useful arithmetic):

* a batched product of (B, m, k) by (B, k, n): 2 B m k n FLOP, 8 B (m k + k n + m n) bytes
  (both operands read, the result written);
* a draw of E normals: 0 FLOP (the generator's arithmetic is not counted: the generator
  fraction measures it), 8 E bytes written;
* an elementwise pass over E numbers (ReLU, a mask): E FLOP, 16 E bytes; a norm over E
  numbers: 2 E FLOP, 8 E bytes read;
* a Cholesky factor of B N x N matrices: B N^3 / 3 FLOP, 16 B N^2 bytes; a pseudo-inverse
  by eigendecomposition: 11 B N^3 FLOP (9 N^3 for eigenvalues and vectors, Golub & Van
  Loan, Matrix Computations, 4th ed., section 8.3; 2 N^3 to rebuild), 32 B N^2 bytes.

Per method, summed over layers l = 1..L (a = f_{l-1}, b = f_l):

* ``lean_loop``, ``vmap``, ``batched`` (the same work): forward, draw B a b, product
  (B, N, a) x (B, a, b), ReLU pass and norm over B N b; backward (``ab19``), draw of the
  top delta B N f_L, the norm of every delta (B N b), and for l >= 2 the product
  (B, N, b) x (B, b, a) and the mask pass over B N a;
* ``rng``, ``rng_stream``: the draws of the explicit path only;
* ``exact`` of ``hr18`` (the norm chain): per layer 2 B random numbers (16 B bytes) and 17
  elementwise operations on B numbers (17 B FLOP, 16 x 17 B bytes; on a device they run once
  on the L B numbers of all layers, ``eit.exact.engine._norm_chain_at_once``);
* ``exact_vector`` (the vector sampler): draw B b, ReLU pass and norm over B b;
* ``exact`` of ``gram`` (the Gram chain) and the forward of ``exact`` of ``ab19``: Gram
  product (B, N, a) x (B, a, N), Cholesky (on a device, a QR factor of the (B, a, N) input
  instead, counted the same), draw B N b, product (B, N, N) x (B, N, b), ReLU
  pass and norm over B N b; the backward of ``ab19`` adds per layer: draw of the top delta
  (once), the pseudo-inverse and a Cholesky factor, a draw of B N a, the products
  (B, N, a) x (B, a, N) twice, (B, N, b) x (B, b, N) twice and (B, N, N) x (B, N, a) four
  times, three passes and a norm over B N a.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import importlib.metadata as md
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch.func import vmap

from eit.core.device import DTYPE, description
from eit.core.seeds import generator
from eit.exact import chains, engine
from eit.sample import laws, relu_mlp
from eit.sample.layers import mlp

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 2
_LOADED = time.monotonic()

#: (workload, sizes): each size is (label, width, depth, n0, inputs, nets).
FULL = {
    "hr18": [("d = 10", 10, 10, 10, 1, 1000), ("d = 30", 30, 30, 30, 1, 500),
             ("d = 100", 100, 100, 100, 1, 100)],
    "ab19": [("n = 100", 100, 10, 500, 10, 100), ("n = 500", 500, 10, 500, 10, 20),
             ("n = 1000", 1000, 10, 500, 10, 8)],
    "gram": [("N = 20", 2000, 10, 2000, 20, 2), ("N = 200", 2000, 10, 2000, 200, 2)],
}
QUICK = {
    "hr18": [("d = 10", 10, 10, 10, 1, 20), ("d = 20", 20, 20, 20, 1, 10)],
    "ab19": [("n = 50", 50, 3, 20, 4, 5)],
    "gram": [("N = 4", 100, 3, 100, 4, 2)],
}
BACKWARD = {"hr18": False, "ab19": True, "gram": False}


# ---------------------------------------------------------------- the user's explicit paths

def one_network(x: torch.Tensor, fans: list[int], gen: torch.Generator, backward: bool):
    """One He-initialized ReLU network on the inputs ``x`` (N, n0), as a user writes it."""
    hs, ws = [x], []
    for n_in, n_out in zip(fans[:-1], fans[1:]):
        w = torch.randn(n_out, n_in, generator=gen, dtype=DTYPE, device=x.device)
        w = w * math.sqrt(2 / n_in)
        hs.append(torch.relu(hs[-1] @ w.T))
        if backward:                           # kept for the backward pass only
            ws.append(w)
    log_h = torch.stack([h.norm(dim=-1) for h in hs]).log()
    if not backward:
        return log_h
    delta = torch.randn(hs[-1].shape, generator=gen, dtype=DTYPE,
                        device=x.device)                             # dloss/da^L
    grads = []
    for l in range(len(ws) - 1, -1, -1):       # ||dloss/dW^l|| = ||delta^l|| ||h^{l-1}||
        grads.append(delta.norm(dim=-1) * hs[l].norm(dim=-1))
        if l > 0:
            delta = (delta @ ws[l]) * (hs[l] > 0)
    return log_h, torch.stack(grads[::-1]).log()


def lean_loop(x, fans, n_nets, gen, backward):
    """The per-network loop: one plain-tensor network at a time."""
    out = [one_network(x, fans, gen, backward) for _ in range(n_nets)]
    if not backward:
        return torch.stack(out, 1)
    return tuple(torch.stack(part, 1) for part in zip(*out))


def vmapped(x, fans, n_nets, gen, backward):
    """``torch.func.vmap`` of the same one-network function over the networks."""
    fn = vmap(partial(one_network, fans=fans, gen=gen, backward=backward),
              randomness="different")
    out = fn(x.expand(n_nets, *x.shape))
    if not backward:
        return out.transpose(0, 1)
    return tuple(o.transpose(0, 1) for o in out)


def blocks(fans: list[int], n_inputs: int, n_nets: int, backward: bool) -> list[tuple]:
    """The shapes of the normals the explicit batched path draws, in its order."""
    out = [(n_nets, n_out, n_in) for n_in, n_out in zip(fans[:-1], fans[1:])]
    return out + ([(n_nets, n_inputs, fans[-1])] if backward else [])


def rng_limit(shapes: list[tuple], gen: torch.Generator) -> None:
    """The generator limit: the same float64 normals, in the same blocks, nothing else."""
    for shape in shapes:
        torch.randn(shape, generator=gen, dtype=DTYPE, device=gen.device)


def rng_stream(shapes: list[tuple], gen: torch.Generator) -> None:
    """The generator's own rate: the library's stream of the same normals, held nowhere.

    A block of at least ``laws.PARALLEL_MIN`` numbers is drawn as the library draws it, in
    chunks of ``laws.CHUNK`` numbers, here into a few reused buffers (no fresh memory, no
    page faults); a smaller block is one call of the generator, as in the library.
    """
    for shape in shapes:
        numel = math.prod(shape)
        if numel >= laws.PARALLEL_MIN:
            for _ in laws.chunks("normal", numel, gen):
                pass
        else:
            torch.randn(shape, generator=gen, dtype=DTYPE)


# ---------------------------------------------------------------------- counting draws

@contextlib.contextmanager
def counting():
    """Count the random numbers the library draws (normals; gamma, binomial, uniform).

    The library's two primitives of a draw are counted: ``laws._direct`` (one call of the
    generator) and ``laws._chunks`` (the chunked stream of a large CPU draw).
    """
    counts = {"normals": 0, "other": 0}
    direct, chunked = laws._direct, laws._chunks
    gamma, binomial = torch._standard_gamma, torch.binomial

    def counted_direct(kind, shape, gen, dtype):
        counts["normals" if kind == "normal" else "other"] += math.prod(shape)
        return direct(kind, shape, gen, dtype)

    def counted_chunks(kind, numel, gen, dtype, out):
        counts["normals" if kind == "normal" else "other"] += numel
        return chunked(kind, numel, gen, dtype, out)

    def counted_gamma(alpha, *args, **kw):
        counts["other"] += alpha.numel()
        return gamma(alpha, *args, **kw)

    def counted_binomial(count, *args, **kw):
        counts["other"] += count.numel()
        return binomial(count, *args, **kw)

    laws._direct, laws._chunks = counted_direct, counted_chunks
    torch._standard_gamma, torch.binomial = counted_gamma, counted_binomial
    try:
        yield counts
    finally:
        laws._direct, laws._chunks = direct, chunked
        torch._standard_gamma, torch.binomial = gamma, binomial


# ---------------------------------------------------------------------------- methods

def methods(workload: str, width: int, depth: int, n0: int, n_inputs: int, n_nets: int,
            gen: torch.Generator) -> dict[str, tuple[Callable[[], object], int | None]]:
    """name -> (call, normals drawn, or None when counted from the library's draws)."""
    backward = BACKWARD[workload]
    fans = [n0] + [width] * depth
    if workload == "hr18":
        x = torch.zeros(1, n0, dtype=DTYPE, device=gen.device)
        x[0, 0] = 1.0
    else:
        x = torch.randn(n_inputs, n0, generator=gen, dtype=DTYPE, device=gen.device)
    shapes = blocks(fans, n_inputs, n_nets, backward)
    explicit = sum(math.prod(s) for s in shapes)
    delta = "random" if backward else None
    net = mlp([width] * depth, laws.he())
    out = {
        "lean_loop": (lambda: lean_loop(x, fans, n_nets, gen, backward), explicit),
        "vmap": (lambda: vmapped(x, fans, n_nets, gen, backward), explicit),
        "batched": (lambda: relu_mlp(x, [width] * depth, laws.he(), n_nets=n_nets, gen=gen,
                                     delta=delta), None),
    }
    if workload == "hr18":
        out["exact"] = (lambda: engine.trace(net, x, n_nets=n_nets, gen=gen), None)
        out["exact_vector"] = (lambda: engine.trace(net, x, n_nets=n_nets, gen=gen,
                                                    method="conditional"), None)
    elif workload == "ab19":
        out["exact"] = (lambda: engine.trace(net, x, n_nets=n_nets, gen=gen,
                                             backward="random_preactivation"), None)
    else:
        variances = [2.0 / n for n in fans[:-1]]
        out["exact"] = (lambda: chains.gram_chain(x, [width] * depth, variances,
                                                  n_nets=n_nets, gen=gen), None)
    out["rng"] = (lambda: rng_limit(shapes, gen), explicit)
    if gen.device.type == "cpu":                 # laws.chunks is the CPU stream
        out["rng_stream"] = (lambda: rng_stream(shapes, gen), explicit)
    return out


#: A repeat lasts at least this CPU time: a faster method's repeat is several calls.
MIN_REPEAT_S = 0.25


def cpu_seconds(call: Callable[[], object], calls: int = 1) -> tuple[float, dict]:
    """CPU time of this process (all its threads) per call, over ``calls`` consecutive calls,
    and the draws of one call."""
    gc.collect()
    with counting() as counts:
        start = time.process_time()
        for _ in range(calls):
            call()
        seconds = (time.process_time() - start) / calls
    per_call = {}
    for kind, n in counts.items():
        if n % calls:
            raise RuntimeError(f"{calls} calls drew {n} {kind} numbers: not the same per call")
        per_call[kind] = n // calls
    return seconds, per_call


def calls_per_repeat(seconds: float) -> int:
    """Calls in one repeat of a method whose one call took ``seconds`` (MIN_REPEAT_S)."""
    return max(1, math.ceil(MIN_REPEAT_S / max(seconds, 1e-6)))


def run(sizes: dict, repeats: int, log=print) -> list[dict]:
    gen = generator(0)
    rows = []
    gc.collect()
    gc.freeze()            # the imports' objects: the gc.collect before every call skips them
    for workload, points in sizes.items():
        for i, (label, width, depth, n0, n_inputs, n_nets) in enumerate(points):
            calls = methods(workload, width, depth, n0, n_inputs, n_nets, gen)
            if i == 0:                                   # warm-up, untimed
                for call, _ in calls.values():
                    call()
            repeat = {name: calls_per_repeat(cpu_seconds(call)[0])   # calibration, untimed
                      for name, (call, _) in calls.items()}
            times = {name: [] for name in calls}
            draws = {name: [] for name in calls}
            for _ in range(repeats):                     # interleaved: A, B, C, A, B, C, ...
                for name, (call, _) in calls.items():
                    seconds, counts = cpu_seconds(call, repeat[name])
                    times[name].append(seconds)
                    draws[name].append(counts)
            explicit = calls["lean_loop"][1]
            for name, (_, normals) in calls.items():
                counted = draws[name][0]
                if any(d != counted for d in draws[name]):
                    raise RuntimeError(f"{workload} {label} {name}: draws differ by repeat")
                if normals is None:                      # a library method: counted
                    normals, other = counted["normals"], counted["other"]
                    if name == "batched" and normals != explicit:
                        raise RuntimeError(f"{workload} {label}: the batched path drew "
                                           f"{normals} normals, the explicit count is "
                                           f"{explicit}")
                else:
                    other = 0
                median = statistics.median(times[name])
                rows.append({"workload": workload, "size": label, "width": width,
                             "depth": depth, "n0": n0, "inputs": n_inputs, "nets": n_nets,
                             "method": name, "calls": repeat[name],
                             "seconds": times[name], "median": median,
                             "normals": normals, "other_random": other,
                             "samples": n_nets * n_inputs})
                log(f"{workload:5s} {label:9s} {name:13s} median {median:9.4f} s  "
                    f"[{min(times[name]):.4f}, {max(times[name]):.4f}]  "
                    f"normals {normals:>11,d}")
    gc.unfreeze()
    return rows


# ---------------------------------------------------------------------- the device mode

#: The device mode's sizes, run in this order: the CPU file's sizes of every workload first,
#: then the larger batches (so that a budget cut loses the largest sizes first).
DEVICE = [
    ("hr18", [("d = 10", 10, 10, 10, 1, 1000), ("d = 30", 30, 30, 30, 1, 500),
              ("d = 100", 100, 100, 100, 1, 100)]),
    ("ab19", [("n = 100", 100, 10, 500, 10, 100), ("n = 500", 500, 10, 500, 10, 20),
              ("n = 1000", 1000, 10, 500, 10, 8)]),
    ("gram", [("N = 20", 2000, 10, 2000, 20, 2), ("N = 200", 2000, 10, 2000, 200, 2)]),
    ("hr18", [("d = 100, 10k nets", 100, 100, 100, 1, 10_000)]),
    ("ab19", [("n = 1000, 256 nets", 1000, 10, 500, 10, 256),
              ("n = 1000, N = 2000", 1000, 10, 500, 2000, 16)]),
    ("gram", [("N = 200, 64 nets", 2000, 10, 2000, 200, 64),
              ("N = 2000, n = 4060", 4060, 10, 4060, 2000, 4)]),
]
DEVICE_QUICK = [
    ("hr18", [("d = 10", 10, 10, 10, 1, 20), ("d = 20", 20, 20, 20, 1, 10)]),
    ("ab19", [("n = 50", 50, 3, 20, 4, 5)]),
    ("gram", [("N = 4", 100, 3, 100, 4, 2)]),
    ("ab19", [("n = 8, N = 16", 8, 3, 20, 16, 3)]),
]
#: ``lean_loop`` runs where nets x depth is at most this (one launch per layer and network).
LEAN_MAX = 20_000
#: Seconds kept free at the end of the budget (writing the file); a tenth of smaller budgets.
RESERVE_S = 5.0

#: Peak float64 rates and memory bandwidth of known devices: (fragment of the device name,
#: FP64 tensor-core FLOP/s, FP64 FLOP/s without tensor cores, bytes/s), most specific first.
#: Sources, NVIDIA's data sheets: "NVIDIA H100 Tensor Core GPU" (SXM 67 / 34 TFLOP/s,
#: 3.35 TB/s; PCIe 51 / 26, 2.0 TB/s; NVL 60 / 30, 3.9 TB/s), "NVIDIA H200 Tensor Core GPU"
#: (SXM 67 / 34, 4.8 TB/s; NVL 60 / 30, 4.8 TB/s), "NVIDIA A100 Tensor Core GPU" (19.5 / 9.7;
#: SXM 80GB 2.039 TB/s, PCIe 80GB 1.935 TB/s, 40GB 1.555 TB/s). An H100 SXM names itself
#: "NVIDIA H100 80GB HBM3".
PEAKS = (
    ("H200 NVL", 60e12, 30e12, 4.8e12),
    ("H200", 67e12, 34e12, 4.8e12),
    ("H100 NVL", 60e12, 30e12, 3.9e12),
    ("H100 PCIe", 51e12, 26e12, 2.0e12),
    ("H100", 67e12, 34e12, 3.35e12),
    ("A100-SXM4-80GB", 19.5e12, 9.7e12, 2.039e12),
    ("A100 80GB PCIe", 19.5e12, 9.7e12, 1.935e12),
    ("A100", 19.5e12, 9.7e12, 1.555e12),
)


def peak(name: str, props=None) -> dict:
    """The peak float64 FLOP/s and bandwidth of a device, from :data:`PEAKS` by its name.

    An unknown device gets None (no fractions), or its bandwidth from ``props`` (the result
    of ``torch.cuda.get_device_properties``) where they give the memory clock (kHz) and bus
    width (bits): 2 x clock x width / 8 (double data rate).
    """
    for fragment, tensor, vector, bandwidth in PEAKS:
        if fragment.lower() in name.lower():
            return {"device": name, "fp64_tensor_flop_s": tensor, "fp64_flop_s": vector,
                    "bytes_s": bandwidth,
                    "source": f"tools/benchmark.py PEAKS {fragment!r} (NVIDIA data sheet)",
                    "fractions_of": "fp64_tensor_flop_s and bytes_s"}
    out = {"device": name, "fp64_tensor_flop_s": None, "fp64_flop_s": None, "bytes_s": None,
           "source": "unknown device: no peak", "fractions_of": None}
    clock = getattr(props, "memory_clock_rate", None)
    bus = getattr(props, "memory_bus_width", None)
    if clock and bus:
        out.update(bytes_s=2.0 * clock * 1e3 * bus / 8, fractions_of="bytes_s",
                   source="bandwidth from torch.cuda.get_device_properties (2 x memory clock "
                          "x bus width / 8); FLOP/s unknown")
    return out


class Work:
    """FLOP and bytes of the work model (the module docstring gives the formulas).

    ``matmul_flops`` is the part of ``flops`` spent in batched products.
    """

    def __init__(self) -> None:
        self.flops = self.bytes = self.matmul_flops = 0.0

    def __repr__(self) -> str:
        return f"Work(flops={self.flops:g}, bytes={self.bytes:g})"

    def mm(self, b: int, m: int, k: int, n: int) -> None:
        """A batched product (b, m, k) x (b, k, n)."""
        self.flops += 2.0 * b * m * k * n
        self.matmul_flops += 2.0 * b * m * k * n
        self.bytes += 8.0 * b * (m * k + k * n + m * n)

    def draw(self, numel: int) -> None:
        self.bytes += 8.0 * numel

    def passes(self, numel: int, count: int = 1) -> None:
        """``count`` elementwise passes over ``numel`` numbers."""
        self.flops += 1.0 * count * numel
        self.bytes += 16.0 * count * numel

    def norm(self, numel: int) -> None:
        self.flops += 2.0 * numel
        self.bytes += 8.0 * numel

    def cholesky(self, b: int, n: int) -> None:
        self.flops += b * n**3 / 3.0
        self.bytes += 16.0 * b * n * n

    def pinv(self, b: int, n: int) -> None:
        self.flops += 11.0 * b * n**3
        self.bytes += 32.0 * b * n * n


def work(workload: str, method: str, width: int, depth: int, n0: int, inputs: int,
         nets: int) -> Work:
    """The work model of one call of ``method`` (module docstring)."""
    b_, n_ = nets, inputs
    fans = [n0] + [width] * depth
    layers = list(zip(fans[:-1], fans[1:]))
    backward = BACKWARD[workload]
    w = Work()
    if method in ("lean_loop", "vmap", "batched", "rng", "rng_stream"):
        draws_only = method.startswith("rng")
        for a, b in layers:
            w.draw(b_ * a * b)
            if not draws_only:
                w.mm(b_, n_, a, b)
                w.passes(b_ * n_ * b)
                w.norm(b_ * n_ * b)
        if backward:
            w.draw(b_ * n_ * fans[-1])
            for i, (a, b) in enumerate(layers):
                if draws_only:
                    break
                w.norm(b_ * n_ * b)
                if i > 0:
                    w.mm(b_, n_, b, a)
                    w.passes(b_ * n_ * a)
        return w
    if method == "exact" and workload == "hr18":          # the norm chain
        for _ in layers:
            w.draw(2 * b_)
            w.passes(b_, 17)
        return w
    if method == "exact_vector":
        for _, b in layers:
            w.draw(b_ * b)
            w.passes(b_ * b)
            w.norm(b_ * b)
        return w
    if method == "exact":                                 # conditional Gaussian, N inputs
        for a, b in layers:
            w.mm(b_, n_, a, n_)
            w.cholesky(b_, n_)
            w.draw(b_ * n_ * b)
            w.mm(b_, n_, n_, b)
            w.passes(b_ * n_ * b)
            w.norm(b_ * n_ * b)
        if backward:
            w.draw(b_ * n_ * fans[-1])
            for a, b in layers:
                w.pinv(b_, n_)
                w.cholesky(b_, n_)
                w.draw(b_ * n_ * a)
                for _ in range(2):
                    w.mm(b_, n_, a, n_)
                    w.mm(b_, n_, b, n_)
                for _ in range(4):
                    w.mm(b_, n_, n_, a)
                w.passes(b_ * n_ * a, 3)
                w.norm(b_ * n_ * a)
        return w
    raise ValueError(f"method: no work model for {method!r} of {workload!r}")


def excluded(workload: str, method: str, width: int, depth: int, inputs: int,
             nets: int) -> str | None:
    """Why the device mode does not run ``method`` at this size (None: it runs)."""
    if method == "lean_loop" and nets * depth > LEAN_MAX:
        return (f"not run: nets x depth = {nets * depth:,} > {LEAN_MAX:,} (one launch per "
                "layer and network)")
    if method == "exact" and workload != "hr18" and inputs >= width:
        return (f"not run: N = {inputs} inputs >= n = {width} units, the Gram matrices are "
                "singular or nearly so, and the conditional sampler falls back to "
                "eigendecompositions")
    return None


def since_start() -> float:
    """Seconds since this process started (Linux ``/proc``; else since this module loaded)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rpartition(")")[2].split()[19])          # field 22: starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    return time.monotonic() - _LOADED


def _free(dev: torch.device) -> None:
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()


def device_run(plan: list, repeats: int, max_seconds: float, *, gen: torch.Generator,
               peak_info: dict, sync: Callable[[], None] = lambda: None,
               clock: Callable[[], float] = time.perf_counter, started: float | None = None,
               make: Callable = methods, log=print,
               checkpoint: Callable[[list, dict], None] | None = None) -> tuple[list, dict]:
    """The device mode's measurements: (rows, budget); see the module docstring.

    ``sync`` waits for the device, ``clock`` reads the wall clock, ``started`` is the seconds
    already spent when called (default :func:`since_start`), ``make`` builds the methods of a
    size (:func:`methods`), ``checkpoint(rows, budget)`` is called after every size.
    """
    started = since_start() if started is None else started
    reserve = min(RESERVE_S, max_seconds / 10)
    deadline = clock() + max_seconds - started - reserve
    rows: list[dict] = []
    skipped: list[dict] = []
    budget = {"max_seconds": max_seconds, "reserve_s": reserve, "complete": True,
              "skipped": skipped}

    def skip(workload, label, method, reason, budget_cut=False):
        skipped.append({"workload": workload, "size": label, "method": method,
                        "reason": reason})
        if budget_cut:
            budget["complete"] = False
        log(f"{workload:5s} {label:20s} {method:13s} skipped: {reason}")

    def timed(call) -> float:                  # no gc.collect here: 0.1-0.5 s a call
        gc.disable()
        try:
            sync()
            start = clock()
            call()
            sync()
            return clock() - start
        finally:
            gc.enable()

    gc.collect()
    gc.freeze()                                # the imports' objects: never scanned again

    try:
        _device_sizes(plan, repeats, gen, peak_info, make, log, checkpoint, clock, deadline,
                      rows, budget, skip, timed)
    except KeyboardInterrupt:                  # stopped from outside: keep what was measured
        skip("*", "*", "*", "interrupted", True)
        if checkpoint is not None:
            checkpoint(rows, budget)
        raise
    finally:
        gc.unfreeze()
    return rows, budget


def _device_sizes(plan, repeats, gen, peak_info, make, log, checkpoint, clock, deadline,
                  rows, budget, skip, timed) -> None:
    """The loop of :func:`device_run` over the sizes (it appends to ``rows``)."""
    last: dict = {}                     # (workload, method) -> (median, Work)
    stopped: set = set()                # (workload, method) cut by the budget
    for workload, points in plan:
        for label, width, depth, n0, n_inputs, n_nets in points:
            try:
                calls = make(workload, width, depth, n0, n_inputs, n_nets, gen)
            except Exception as err:                     # the inputs did not fit
                skip(workload, label, "*", f"error: {type(err).__name__}: {err}"[:400])
                _free(gen.device)
                continue
            works = {m: work(workload, m, width, depth, n0, n_inputs, n_nets) for m in calls}
            active: dict = {}
            for name, (call, normals) in calls.items():
                reason = excluded(workload, name, width, depth, n_inputs, n_nets)
                if reason is not None:
                    skip(workload, label, name, reason)
                    continue
                if (workload, name) in stopped:
                    skip(workload, label, name, "budget: cut at a smaller size", True)
                    continue
                if (workload, name) in last:
                    seconds, before = last[workload, name]
                    ratio = max(1.0, works[name].flops / max(before.flops, 1.0),
                                works[name].bytes / max(before.bytes, 1.0))
                    if clock() + seconds * ratio > deadline:
                        stopped.add((workload, name))
                        skip(workload, label, name, f"budget: a call predicted at "
                             f"{seconds * ratio:.3g} s would end past the deadline", True)
                        continue
                if clock() >= deadline:
                    skip(workload, label, name, "budget: past the deadline", True)
                    continue
                try:
                    with counting() as counts:           # the warm-up: untimed, counted
                        seconds = timed(call)
                except Exception as err:                 # out of memory included
                    skip(workload, label, name, f"error: {type(err).__name__}: {err}"[:400])
                    _free(gen.device)
                    continue
                active[name] = (call, normals, dict(counts), seconds)
            times = {name: [] for name in active}
            latest = {name: entry[3] for name, entry in active.items()}
            for done in range(repeats):
                if clock() + sum(latest.values()) > deadline:
                    skip(workload, label, "*", f"budget: {done} of {repeats} rounds", True)
                    break
                for name in list(active):
                    try:
                        latest[name] = timed(active[name][0])
                    except Exception as err:
                        skip(workload, label, name, f"error: {type(err).__name__}: "
                             f"{err}"[:400])
                        del active[name], latest[name]
                        _free(gen.device)
                        continue
                    times[name].append(latest[name])
            explicit = calls["rng"][1]
            size_rows = []
            for name, (_, normals, counted, _) in active.items():
                if not times[name]:
                    continue
                other = 0
                if normals is None:
                    normals, other = counted["normals"], counted["other"]
                median = statistics.median(times[name])
                w = works[name]
                row = {"workload": workload, "size": label, "width": width, "depth": depth,
                       "n0": n0, "inputs": n_inputs, "nets": n_nets, "method": name,
                       "seconds": times[name], "median": median, "normals": normals,
                       "other_random": other, "samples": n_nets * n_inputs,
                       "flops": w.flops, "bytes": w.bytes, "flop_s": w.flops / median,
                       "byte_s": w.bytes / median}
                tensor, bandwidth = peak_info.get("fp64_tensor_flop_s"), peak_info.get(
                    "bytes_s")
                row["flop_fraction"] = row["flop_s"] / tensor if tensor else None
                row["byte_fraction"] = row["byte_s"] / bandwidth if bandwidth else None
                if name == "batched" and normals != explicit:
                    row["explicit_normals"] = explicit   # a defect: the counts differ
                size_rows.append(row)
                last[workload, name] = (median, w)
            rng = next((r for r in size_rows if r["method"] == "rng"), None)
            for row in size_rows:
                row["generator_fraction"] = (
                    row["normals"] / rng["normals"] * rng["median"] / row["median"]
                    if rng and rng["normals"] else None)
                log(f"{workload:5s} {row['size']:20s} {row['method']:13s} median "
                    f"{row['median'] * 1e3:9.3f} ms  {row['flop_s'] / 1e9:9.1f} GFLOP/s  "
                    f"{row['byte_s'] / 1e9:8.1f} GB/s  generator "
                    f"{row['generator_fraction'] or 0:.2f}  normals {row['normals']:>13,d}")
            rows.extend(size_rows)
            del calls, active
            _free(gen.device)
            if checkpoint is not None:
                checkpoint(rows, budget)


def device_provenance(dev: torch.device, argv: list[str]) -> dict:
    """Device, versions, date and command of a device-mode run."""
    out = {
        "device": description(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python", "tools/benchmark.py", *argv]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu(),
        "threads": torch.get_num_threads(),
        "versions": {k: md.version(k) for k in ("torch", "numpy")},
    }
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        out["gpu"] = {"name": props.name, "capability": f"{props.major}.{props.minor}",
                      "memory_GiB": round(props.total_memory / 2**30, 1),
                      "multiprocessors": props.multi_processor_count,
                      "cuda": torch.version.cuda}
    return out


def device_main(args, argv: list[str], started: float) -> int:
    """``--device``: measure, write the file (after every size), update the manifest.

    ``started``: the seconds of the budget already spent (the process's start-up when run as
    a script; 0 when another program calls :func:`main`, whose own age is not ours to spend).
    """
    os.environ["EIT_DEVICE"] = args.device     # the library and generator(0) live there
    dev = torch.device(args.device)
    if dev.type == "cpu":
        torch.set_num_threads(1)
        sync, name = (lambda: None), cpu().get("model", "cpu")
        props = None
    else:
        torch.cuda.init()
        sync = torch.cuda.synchronize
        props = torch.cuda.get_device_properties(dev)
        name = props.name
    peak_info = peak(name, props)
    data = ROOT / "data"
    default = (data / "benchmarks" / "cuda.json" if dev.type == "cuda"
               else ROOT / "_build" / "benchmarks" / f"wall-{dev.type}.json")
    out = args.out or default
    out.parent.mkdir(parents=True, exist_ok=True)
    provenance = device_provenance(dev, argv)
    start = time.perf_counter()

    def write(rows: list, budget: dict) -> None:
        result = {
            "schema": SCHEMA,
            "mode": "device",
            "protocol": {
                "device": str(dev),
                "clock": "time.perf_counter between two torch.cuda.synchronize() (wall "
                         "time; no synchronize on the CPU)",
                "repeats": args.repeats,
                "order": "interleaved: one call of each method per round, in the listed order",
                "warmup": "one untimed call of every method at every size (it counts the "
                          "draws)",
                "dtype": "float64",
                "threads": torch.get_num_threads(),
                "total_wall_s": time.perf_counter() - start,
            },
            "provenance": provenance,
            "peak": peak_info,
            "budget": {**budget, "elapsed_s": started + time.perf_counter() - start},
            "rows": rows,
        }
        out.write_text(json.dumps(result, indent=1) + "\n")
        if out.resolve().is_relative_to(data.resolve()):
            update_manifest_lines([out.resolve()], data.resolve())

    log_peak = ", ".join(f"{k} {v:.3g}" for k, v in peak_info.items()
                         if isinstance(v, float))
    log = partial(print, flush=True)           # a run cut short keeps its log
    log(f"{name}: peak {log_peak or 'unknown'} ({peak_info['source']})")
    rows, budget = device_run(DEVICE_QUICK if args.quick else DEVICE, args.repeats,
                              args.max_seconds, gen=generator(0), peak_info=peak_info,
                              sync=sync, started=started, log=log, checkpoint=write)
    write(rows, budget)
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s; "
          f"{'complete' if budget['complete'] else 'cut by the budget'}, "
          f"{len(budget['skipped'])} skips)")
    return 0


# ---------------------------------------------------------------------------- output

def update_manifest_lines(paths: list[Path], data: Path) -> Path:
    """Set the lines of ``paths`` in ``data/SHA256SUMS``, leaving every other line as it is.

    :func:`eit.core.store.update_manifest` rewrites the whole manifest from the files on disk;
    the benchmark owns only its own lines (other results may be in the middle of a run).
    """
    from eit.core import store

    manifest = data / store.MANIFEST
    lines = {}
    for line in manifest.read_text().splitlines() if manifest.exists() else []:
        digest, _, rel = line.partition("  ")
        lines[rel] = digest
    for path in paths:
        lines[path.relative_to(data).as_posix()] = store._sha256(path)
    text = "".join(f"{lines[rel]}  {rel}\n" for rel in sorted(lines))
    store._atomic_write(manifest, text.encode())
    return manifest


def cpu() -> dict:
    """The processor's model name and cache sizes (Linux; empty where unreadable)."""
    out = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                out["model"] = line.partition(":")[2].strip()
                break
    caches = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(caches.glob("index*")):
        with contextlib.suppress(OSError):
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text()
            if kind.strip() != "Instruction":
                out[f"L{level} cache"] = (index / "size").read_text().strip()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="default data/benchmarks/cpu.json (and its manifest line)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a test of the tool)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="the device mode: wall time, FLOP/s and bytes/s against the "
                             "peak, larger batches (default: the CPU mode)")
    parser.add_argument("--max-seconds", type=float, default=170.0,
                        help="the device mode's budget, from the start of the process (from "
                             "the call of main() when another program calls it)")
    parser.add_argument("--register", type=Path, default=None, metavar="PATH",
                        help="only set PATH's line of data/SHA256SUMS (a benchmark file "
                             "copied from another machine into data/) and exit")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.register is not None:
        data = (ROOT / "data").resolve()
        path = args.register.resolve()
        if not path.is_file() or not path.is_relative_to(data):
            parser.error(f"--register: {args.register} is not a file under {data}")
        print(f"updated {update_manifest_lines([path], data)}")
        return 0
    if args.device is not None:
        if not args.max_seconds > 0:
            parser.error(f"--max-seconds must be > 0, got {args.max_seconds:g}")
        if args.device == "cuda" and not torch.cuda.is_available():
            parser.error("--device cuda: no CUDA device (torch.cuda.is_available() is False)")
        started = since_start() if argv is None else 0.0
        return device_main(args, list(sys.argv[1:] if argv is None else argv), started)
    torch.set_num_threads(1)
    start = time.process_time()
    rows = run(QUICK if args.quick else FULL, args.repeats)
    total = time.process_time() - start
    result = {
        "schema": SCHEMA,
        "protocol": {
            "threads": torch.get_num_threads(),
            "clock": "time.process_time (CPU time of the process, all threads)",
            "repeats": args.repeats,
            "order": "interleaved: one call of each method per round, in the listed order",
            "warmup": "one untimed call of every method at the first size of each workload",
            "calibration": "one untimed call of every method at every size; a repeat of a "
                           f"method whose call took less than {MIN_REPEAT_S} CPU s is the "
                           "mean of enough consecutive calls to fill it (the row's calls)",
            "dtype": "float64",
            "total_cpu_s": total,
        },
        "provenance": {
            "device": description(),
            "cpu": cpu(),
            "threads": torch.get_num_threads(),
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python", "tools/benchmark.py", *(argv or sys.argv[1:])]),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "environment": {k: os.environ[k] for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR",
                                                       "OMP_NUM_THREADS") if k in os.environ},
            "versions": {k: md.version(k) for k in ("torch", "numpy")},
        },
        "rows": rows,
    }
    data = ROOT / "data"
    out = args.out or data / "benchmarks" / "cpu.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} ({total:.0f} CPU s)")
    if out.resolve().is_relative_to(data.resolve()):
        print(f"updated {update_manifest_lines([out.resolve()], data.resolve())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
