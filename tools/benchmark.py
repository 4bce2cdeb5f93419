"""Benchmark: the explicit paths a user would write, the library's, and its exact engines.

    python tools/benchmark.py [--out PATH] [--quick] [--repeats R]

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
* ``batched``: the library's explicit batched path, :func:`eit.sample.mlp.relu_mlp`;
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
too), one untimed warm-up call of every method at the first size of each workload, then
``repeats`` rounds of interleaved calls (A, B, C, A, B, C, ...), the same number per method.
Every (workload, size, method) row keeps all per-repeat times, their median and the count of
random numbers drawn (normals, counted from the library's draws for its own methods and
checked against the explicit count). The result goes to ``data/benchmarks/cpu.json`` with
provenance, and its line of ``data/SHA256SUMS`` is updated.
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
from eit.sample import laws
from eit.sample.layers import mlp
from eit.sample.mlp import relu_mlp

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 2

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
        ws.append(torch.randn(n_out, n_in, generator=gen, dtype=DTYPE) * math.sqrt(2 / n_in))
        hs.append(torch.relu(hs[-1] @ ws[-1].T))
    log_h = torch.stack([h.norm(dim=-1) for h in hs]).log()
    if not backward:
        return log_h
    delta = torch.randn(hs[-1].shape, generator=gen, dtype=DTYPE)    # dloss/da^L
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
        torch.randn(shape, generator=gen, dtype=DTYPE)


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
        x = torch.zeros(1, n0, dtype=DTYPE)
        x[0, 0] = 1.0
    else:
        x = torch.randn(n_inputs, n0, generator=gen, dtype=DTYPE)
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
    out["rng_stream"] = (lambda: rng_stream(shapes, gen), explicit)
    return out


def cpu_seconds(call: Callable[[], object]) -> tuple[float, dict]:
    """CPU time of this process (all its threads) for one call, and the draws it made."""
    gc.collect()
    with counting() as counts:
        start = time.process_time()
        call()
        seconds = time.process_time() - start
    return seconds, dict(counts)


def run(sizes: dict, repeats: int, log=print) -> list[dict]:
    gen = generator(0)
    rows = []
    for workload, points in sizes.items():
        for i, (label, width, depth, n0, n_inputs, n_nets) in enumerate(points):
            calls = methods(workload, width, depth, n0, n_inputs, n_nets, gen)
            if i == 0:                                   # warm-up, untimed
                for call, _ in calls.values():
                    call()
            times = {name: [] for name in calls}
            draws = {name: [] for name in calls}
            for _ in range(repeats):                     # interleaved: A, B, C, A, B, C, ...
                for name, (call, _) in calls.items():
                    seconds, counts = cpu_seconds(call)
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
                             "method": name, "seconds": times[name], "median": median,
                             "normals": normals, "other_random": other,
                             "samples": n_nets * n_inputs})
                log(f"{workload:5s} {label:9s} {name:13s} median {median:9.4f} s  "
                    f"[{min(times[name]):.4f}, {max(times[name]):.4f}]  "
                    f"normals {normals:>11,d}")
    return rows


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
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
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
