"""Benchmark: per-network torch.nn loop vs the batched explicit path vs the exact chains.

    python tools/benchmark.py [--out data/benchmarks/<device>.json] [--quick]

Workloads (DESIGN.md section 5, issue "Fast at every scale"):
  * ab19: Arpit & Bengio (2019) Figures 1-2: forward and backward of 10-layer ReLU nets,
    per-sample norms of h^l and of dloss/dW^l, N inputs; widths up to 4060 on a GPU.
  * hr18: Hanin & Rolnick (2018) Figure 1a: depth = width = d, one input per net, many nets.
  * gram: forward statistics of N <= 200 inputs at width >= 2000 (explicit vs Gram chain).
All three methods compute the same statistics at the same sample counts, in float64, in one
process. Results (seconds, throughput, ratios) go to a JSON file with provenance.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from eit.core.device import DTYPE, description, device, generator
from eit.exact import chains as gram
from eit.sample import laws as initializers
from eit.sample import mlp as propagation

ROOT = Path(__file__).resolve().parent.parent


def _sync() -> None:
    if device().type == "cuda":
        torch.cuda.synchronize()


def timed(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs (after one warm-up run)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        _sync()
        start = time.perf_counter()
        fn()
        _sync()
        best = min(best, time.perf_counter() - start)
    return best


def nn_loop(x: torch.Tensor, widths: list[int], n_nets: int, backward: bool) -> None:
    """What a user would write: one torch.nn network at a time, autograd for the gradients."""
    dev = device()
    for _ in range(n_nets):
        fans = [x.shape[-1], *widths]
        layers = [torch.nn.Linear(i, o, bias=False, device=dev, dtype=DTYPE)
                  for i, o in zip(fans[:-1], fans[1:])]
        for layer in layers:
            torch.nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
        h, pre, norms = x, [], [x.norm(dim=-1)]
        for layer in layers:
            a = layer(h)
            if backward:
                a.retain_grad()
            pre.append(a)
            h = torch.relu(a)
            norms.append(h.norm(dim=-1))
        if backward:
            delta = torch.randn_like(pre[-1])
            (pre[-1] * delta).sum().backward()
            grads = [a.grad.norm(dim=-1) * n for a, n in zip(pre, norms[:-1])]
            torch.stack(grads).log()
        torch.stack(norms).log()


def run(quick: bool) -> dict:
    dev = device()
    cuda = dev.type == "cuda"
    gen = generator(0)
    he = initializers.he("fan_out")
    rows = []

    def record(workload, params, method, seconds, samples):
        rows.append({"workload": workload, **params, "method": method, "seconds": seconds,
                     "samples": samples, "samples_per_s": samples / seconds})
        print(f"{workload:5s} {json.dumps(params):60s} {method:9s} {seconds:9.4f} s  "
              f"{samples / seconds:12.1f} samples/s", flush=True)

    # Arpit & Bengio Figures 1-2: forward + backward, N inputs in R^500, L = 10.
    ab_widths = [100, 500] if not cuda else [100, 500, 2000, 4060]
    n_inputs = 200 if not cuda else 2000
    n_nets = 4 if not cuda else 8
    x = torch.randn(n_inputs, 500, dtype=DTYPE, device=dev)
    for w in ([100] if quick else ab_widths):
        p = {"width": w, "depth": 10, "inputs": n_inputs, "nets": n_nets}
        samples = n_inputs * n_nets
        record("ab19", p, "nn_loop", timed(lambda: nn_loop(x, [w] * 10, n_nets, True), 1),
               samples)
        record("ab19", p, "batched", timed(lambda: propagation.relu_mlp(
            x, [w] * 10, he, n_nets=n_nets, gen=gen, delta="random"), 1), samples)

    # Hanin & Rolnick Figure 1a: depth = width = d, one unit input per net.
    hr_nets = 1000 if cuda else 200
    for d in ([10] if quick else [10, 30, 100]):
        p = {"width": d, "depth": d, "inputs": 1, "nets": hr_nets}
        x1 = torch.zeros(1, d, dtype=DTYPE, device=dev)
        x1[0, 0] = 1.0
        record("hr18", p, "nn_loop", timed(lambda: nn_loop(x1, [d] * d, hr_nets, False), 1),
               hr_nets)
        record("hr18", p, "batched", timed(lambda: propagation.relu_mlp(
            x1, [d] * d, he, n_nets=hr_nets, gen=gen)), hr_nets)
        record("hr18", p, "chain", timed(lambda: gram.norm_chain(
            d, [d] * d, [2.0 / d] * d, n_nets=hr_nets, gen=gen)), hr_nets)

    # Gram chain against the explicit path: N <= 200 inputs at width >= 2000.
    for n_in in ([50] if quick else [50, 200]):
        w = 2000
        p = {"width": w, "depth": 10, "inputs": n_in, "nets": 2}
        xg = torch.randn(n_in, 500, dtype=DTYPE, device=dev)
        record("gram", p, "batched", timed(lambda: propagation.relu_mlp(
            xg, [w] * 10, he, n_nets=2, gen=gen), 1), 2 * n_in)
        record("gram", p, "chain", timed(lambda: gram.gram_chain(
            xg, [w] * 10, [2.0 / w] * 10, n_nets=2, gen=gen), 1), 2 * n_in)
    # The ceiling of any path that materializes weights: the generator's throughput.
    count = 10**6 if quick else 2 * 10**7
    record("rng", {"width": 0, "depth": 0, "inputs": 0, "nets": 0}, "randn_f64",
           timed(lambda: torch.randn(count, dtype=DTYPE, generator=gen, device=gen.device), 1),
           count)
    return {"rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="smallest sizes only")
    args = parser.parse_args(argv)
    torch.set_num_threads(os.cpu_count() or 1)
    result = run(args.quick)
    result["provenance"] = {
        "device": description(),
        "threads": torch.get_num_threads(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python", *sys.argv]),
        "python": platform.python_version(),
        "versions": {k: md.version(k) for k in ("torch", "numpy", "scipy")},
    }
    out = args.out or ROOT / "data" / "benchmarks" / f"{device().type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
