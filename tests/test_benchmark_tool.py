"""tools/benchmark.py: the user's hand-written backward is right, and the tool runs."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import torch

from eit.core.seeds import generator

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("benchmark", ROOT / "tools" / "benchmark.py")
benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark)


def test_the_hand_written_gradient_norms_are_autograds():
    gen = generator(3)
    fans, x = [7, 5, 6, 4], torch.randn(3, 7, generator=generator(1), dtype=torch.float64)
    state = gen.get_state()
    log_h, log_gw = benchmark.one_network(x, fans, gen, backward=True)
    gen.set_state(state)                  # the same weights and delta again, for autograd
    ws = [(torch.randn(o, i, generator=gen, dtype=torch.float64) * math.sqrt(2 / i))
          .requires_grad_() for i, o in zip(fans[:-1], fans[1:])]
    delta = torch.randn(3, fans[-1], generator=gen, dtype=torch.float64)
    for k in range(3):
        h = x[k]
        for w in ws:
            a = w @ h
            h = torch.relu(a)
        grads = torch.autograd.grad((a * delta[k]).sum(), ws)
        expected = torch.stack([g.norm() for g in grads]).log()
        assert torch.allclose(log_gw[:, k], expected, rtol=1e-12, atol=1e-12)
        assert math.isclose(float(log_h[-1, k]), float(h.detach().norm().log()), rel_tol=1e-12)


def test_every_method_draws_what_it_says(tmp_path):
    out = tmp_path / "bench.json"
    assert benchmark.main(["--quick", "--repeats", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["provenance"]["threads"] == 1
    rows = {(r["workload"], r["size"], r["method"]): r for r in result["rows"]}
    for (workload, size, method), row in rows.items():
        assert len(row["seconds"]) == 2 and row["median"] > 0
        explicit = rows[workload, size, "batched"]["normals"]
        if method in ("lean_loop", "vmap", "rng", "rng_stream"):
            assert row["normals"] == explicit
        if method.startswith("exact"):
            assert row["normals"] < explicit
