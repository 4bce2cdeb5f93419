"""Kernel launches and host synchronizations per layer of the engines, on both paths.

    python tools/op_counts.py [--out PATH]

Counts, for each engine workload of :data:`ENGINES` (width 32, 5 networks, 3 inputs where the
workload has several, depths 4 and 8 differenced: :func:`eit.core.dispatch_counts.per_layer`),
the ATen operations (a proxy for kernel launches) and the host synchronizations per layer:

* on the CPU, where the engines take their general paths (the committed chapters' streams);
* on the simulated device of :mod:`eit.core.guard`, where a plain ReLU chain takes the device
  path (``eit.sample._fused``), as on CUDA;
* of the one-network function of ``tools/benchmark.py`` under ``torch.func.vmap`` on the same
  workload (the target of issue 28: no more launches per layer than it).

The counts are exact and the same on every machine with the same PyTorch (they count
operations, not time): ``tests/test_op_counts.py`` checks the stored file against a fresh
count. The result goes to ``data/benchmarks/op_counts.json`` with provenance, and its line of
``data/SHA256SUMS`` is updated; the performance chapter shows it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark  # noqa: E402  (tools/benchmark.py: the vmap baseline, the manifest)

from eit.core import guard  # noqa: E402
from eit.core.dispatch_counts import per_layer  # noqa: E402
from eit.core.seeds import generator  # noqa: E402
from eit.exact import chains, engine  # noqa: E402
from eit.sample import laws, relu_mlp  # noqa: E402
from eit.sample.layers import mlp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 1
WIDTH, NETS, INPUTS = 32, 5, 3
DEPTHS = (4, 8)

#: Each engine workload: (what it runs, inputs per network, with a backward pass).
ENGINES = {
    "batched, one input (hr18)": ("eit.sample.relu_mlp", 1, False),
    "batched, backward (ab19)": ("eit.sample.relu_mlp, delta='random'", INPUTS, True),
    "exact norm chain (hr18)": ("eit.exact.engine.trace (the norm chain)", 1, False),
    "exact vector sampler (hr18)": ("eit.exact.engine.trace, method='conditional'", 1, False),
    "exact conditional, backward (ab19)": (
        "eit.exact.engine.trace, backward='random_preactivation'", INPUTS, True),
    "exact gram chain (gram)": ("eit.exact.chains.gram_chain", INPUTS, False),
}


def inputs(n: int) -> torch.Tensor:
    """The workloads' inputs on the compute device: e_1 for one input, else Gaussian."""
    gen = generator(1)
    if n == 1:
        x = torch.zeros(1, WIDTH, dtype=torch.float64, device=gen.device)
        x[0, 0] = 1.0
        return x
    return torch.randn(n, WIDTH, generator=gen, dtype=torch.float64, device=gen.device)


def workload(name: str) -> tuple[Callable[[int], object], Callable[[int], object]]:
    """(run(depth), its vmap baseline(depth)) of one engine, on the compute device."""
    _, n_in, backward = ENGINES[name]
    gen, he, x = generator(0), laws.he(), inputs(n_in)
    widths = lambda d: [WIDTH] * d  # noqa: E731
    vm_gen = generator(0)
    baseline = lambda d: benchmark.vmapped(x, [WIDTH] * (d + 1), NETS, vm_gen,  # noqa: E731
                                           backward)
    runs = {
        "batched, one input (hr18)": lambda d: relu_mlp(x, widths(d), he, n_nets=NETS,
                                                        gen=gen),
        "batched, backward (ab19)": lambda d: relu_mlp(x, widths(d), he, n_nets=NETS, gen=gen,
                                                       delta="random"),
        "exact norm chain (hr18)": lambda d: engine.trace(mlp(widths(d), he), x,
                                                          n_nets=NETS, gen=gen),
        "exact vector sampler (hr18)": lambda d: engine.trace(
            mlp(widths(d), he), x, n_nets=NETS, gen=gen, method="conditional"),
        "exact conditional, backward (ab19)": lambda d: engine.trace(
            mlp(widths(d), he), x, n_nets=NETS, gen=gen, backward="random_preactivation"),
        "exact gram chain (gram)": lambda d: chains.gram_chain(
            x, widths(d), [2.0 / WIDTH] * d, n_nets=NETS, gen=gen),
    }
    return runs[name], baseline


def count(where: str) -> dict[str, dict]:
    """Per-layer launches and host synchronizations of every engine (and of vmap) on
    ``where`` ('cpu' or 'sim'), with ``EIT_DEVICE`` set to it for the duration."""
    before = os.environ.get("EIT_DEVICE")
    os.environ["EIT_DEVICE"] = where
    try:
        out = {}
        for name in ENGINES:
            run, baseline = workload(name)
            cost, vm = per_layer(run, DEPTHS), per_layer(baseline, DEPTHS)
            out[name] = {"launches": cost["launches"], "syncs": cost["syncs"],
                         "vmap": vm["launches"]}
        return out
    finally:
        if before is None:
            os.environ.pop("EIT_DEVICE")
        else:
            os.environ["EIT_DEVICE"] = before


def rows() -> list[dict]:
    """One row per engine: launches and syncs per layer on the CPU and on a device, vmap's."""
    guard.register()
    cpu, device = count("cpu"), count("sim")
    return [{"engine": name, "runs": ENGINES[name][0],
             "cpu_launches": cpu[name]["launches"], "cpu_syncs": cpu[name]["syncs"],
             "device_launches": device[name]["launches"],
             "device_syncs": device[name]["syncs"], "vmap_launches": device[name]["vmap"]}
            for name in ENGINES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="default data/benchmarks/op_counts.json")
    args = parser.parse_args(argv)
    result = {
        "schema": SCHEMA,
        "protocol": {
            "width": WIDTH, "nets": NETS, "inputs": INPUTS, "depths": list(DEPTHS),
            "counted": "ATen operations (launches) and host synchronizations of a call at "
                       "two depths, differenced and divided by the difference of the depths "
                       "(eit.core.dispatch_counts.per_layer); 'device' is the simulated "
                       "device of eit.core.guard, whose paths are CUDA's",
        },
        "provenance": {
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python", "tools/op_counts.py",
                                 *(sys.argv[1:] if argv is None else argv)]),
            "versions": {k: md.version(k) for k in ("torch",)},
        },
        "rows": rows(),
    }
    data = ROOT / "data"
    out = args.out or data / "benchmarks" / "op_counts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    if out.resolve().is_relative_to(data.resolve()):
        print(f"updated {benchmark.update_manifest_lines([out.resolve()], data.resolve())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
