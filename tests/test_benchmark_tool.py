"""tools/benchmark.py: the user's hand-written backward is right, and the tool runs."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import torch

from eit.core.seeds import generator
from eit.sample import laws

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("benchmark", ROOT / "tools" / "benchmark.py")
benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark)


def test_the_hand_written_gradient_norms_are_autograds():
    gen = generator(3)
    g1 = generator(1)
    fans, x = [7, 5, 6, 4], torch.randn(3, 7, generator=g1, dtype=torch.float64,
                                        device=g1.device)
    state = gen.get_state()
    log_h, log_gw = benchmark.one_network(x, fans, gen, backward=True)
    gen.set_state(state)                  # the same weights and delta again, for autograd
    ws = [(torch.randn(o, i, generator=gen, dtype=torch.float64, device=gen.device)
           * math.sqrt(2 / i)).requires_grad_() for i, o in zip(fans[:-1], fans[1:])]
    delta = torch.randn(3, fans[-1], generator=gen, dtype=torch.float64, device=gen.device)
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
        # a repeat fills MIN_REPEAT_S: the quick sizes' calls take milliseconds
        assert row["calls"] >= 1 and row["calls"] * row["median"] > 0.4 * benchmark.MIN_REPEAT_S
    assert max(r["calls"] for r in rows.values()) > 1


def test_a_repeat_of_several_calls_counts_one_calls_draws():
    gen = generator(0)
    seconds, counts = benchmark.cpu_seconds(
        lambda: laws._direct("normal", (3, 4), gen, torch.float64), calls=5)
    assert seconds > 0 and counts == {"normals": 12, "other": 0}
    assert benchmark.calls_per_repeat(1.0) == 1
    assert benchmark.calls_per_repeat(benchmark.MIN_REPEAT_S / 10) == 10


# ------------------------------------------------------------------------ the device mode

def test_the_work_models_products_are_the_ones_the_methods_run(monkeypatch):
    """The model's product FLOPs equal torch's FLOP counter on every method and workload.

    On the CPU path: off the CPU the exact Arpit-Bengio engine solves with a Cholesky factor
    instead of a pseudo-inverse (no host synchronization), which the model does not count yet.
    """
    from torch.utils.flop_counter import FlopCounterMode

    monkeypatch.setenv("EIT_DEVICE", "cpu")
    gen = generator(0)
    sizes = {"hr18": (6, 5, 6, 1, 3), "ab19": (9, 3, 5, 4, 2), "gram": (12, 3, 12, 4, 2)}
    for workload, (width, depth, n0, inputs, nets) in sizes.items():
        calls = benchmark.methods(workload, width, depth, n0, inputs, nets, gen)
        for method, (call, _) in calls.items():
            with FlopCounterMode(display=False) as counter:
                call()
            model = benchmark.work(workload, method, width, depth, n0, inputs, nets)
            extra = 0
            if workload == "ab19" and method == "batched":   # the library's dL/dh^0 too
                extra = 2 * nets * inputs * n0 * width
            assert counter.get_total_flops() == model.matmul_flops + extra, (workload, method)


def test_the_work_model_by_hand():
    w = benchmark.Work()
    w.mm(2, 3, 4, 5)
    assert (w.flops, w.bytes) == (240, 8 * 2 * (12 + 20 + 15))
    # two layers 3 -> 4 -> 4, 5 inputs, 2 nets, forward: draws, products, ReLU and norm
    w = benchmark.work("gram", "batched", 4, 2, 3, 5, 2)
    assert w.flops == 2 * 2 * 5 * (3 * 4 + 4 * 4) + 3 * 2 * (2 * 5 * 4)
    draws, products = 8 * 2 * (12 + 16), 8 * 2 * ((15 + 12 + 20) + (20 + 16 + 20))
    assert w.bytes == draws + products + 24 * 2 * (2 * 5 * 4)
    for workload, points in benchmark.QUICK.items():
        for _, width, depth, n0, inputs, nets in points:
            shapes = benchmark.blocks([n0] + [width] * depth, inputs, nets,
                                      benchmark.BACKWARD[workload])
            normals = sum(math.prod(s) for s in shapes)
            rng = benchmark.work(workload, "rng", width, depth, n0, inputs, nets)
            assert (rng.flops, rng.bytes) == (0, 8 * normals)
            same = {(benchmark.work(workload, m, width, depth, n0, inputs, nets).flops)
                    for m in ("lean_loop", "vmap", "batched")}
            assert len(same) == 1


def test_peaks_of_known_and_unknown_devices():
    from types import SimpleNamespace

    h100 = benchmark.peak("NVIDIA H100 80GB HBM3")
    assert (h100["fp64_tensor_flop_s"], h100["fp64_flop_s"], h100["bytes_s"]) == (
        67e12, 34e12, 3.35e12)
    assert benchmark.peak("NVIDIA H200")["bytes_s"] == 4.8e12
    assert benchmark.peak("NVIDIA H100 PCIe")["bytes_s"] == 2.0e12
    assert benchmark.peak("NVIDIA H200 NVL")["fp64_tensor_flop_s"] == 60e12
    unknown = benchmark.peak("Some GPU")
    assert unknown["bytes_s"] is None and unknown["fractions_of"] is None
    props = SimpleNamespace(memory_clock_rate=2_619_000, memory_bus_width=5120)
    assert benchmark.peak("Some GPU", props)["bytes_s"] == 2 * 2.619e9 * 5120 / 8


class FakeDevice:
    """A clock that calls advance: each method takes ``cost(workload, method, nets)`` s."""

    def __init__(self, cost):
        self.now, self.cost, self.calls = 0.0, cost, []

    def clock(self):
        return self.now

    def make(self, workload, width, depth, n0, inputs, nets, gen):
        def call(m):
            def run():
                self.calls.append((workload, nets, m))
                seconds = self.cost(workload, m, nets)
                if seconds is None:
                    raise torch.OutOfMemoryError("CUDA out of memory (fake)")
                self.now += seconds
            return run
        names = ["lean_loop", "vmap", "batched", "exact", "rng"]
        return {m: (call(m), None if m in ("batched", "exact") else 7) for m in names}


def test_the_budget_is_kept_with_a_fake_device():
    def cost(workload, method, nets):
        if method == "exact" and nets == 40:
            return None                              # out of memory at one size
        return {"lean_loop": 0.5, "exact": 0.01}.get(method, 0.05) * nets / 10

    fake = FakeDevice(cost)
    plan = [("hr18", [("a", 10, 10, 10, 1, 10), ("b", 10, 10, 10, 1, 20),
                      ("c", 10, 10, 10, 1, 40), ("d", 10, 10, 10, 1, 80)])]
    checkpoints = []
    rows, budget = benchmark.device_run(
        plan, 5, 30.0, gen=generator(0), peak_info=benchmark.peak("NVIDIA H200"),
        clock=fake.clock, started=2.0, make=fake.make, log=lambda *a: None,
        checkpoint=lambda r, b: checkpoints.append(len(r)))
    assert budget["reserve_s"] == 3.0 and fake.now <= 30.0 - 2.0 - 3.0
    assert not budget["complete"] and len(checkpoints) == 4
    reasons = {(s["size"], s["method"]): s["reason"] for s in budget["skipped"]}
    assert reasons["c", "exact"].startswith("error: OutOfMemoryError")
    assert reasons["d", "lean_loop"].startswith("budget")          # 4 s a call: too long
    by_size = {}
    for r in rows:
        by_size.setdefault(r["size"], set()).add(len(r["seconds"]))
        assert r["flop_fraction"] == r["flop_s"] / 67e12
        assert r["byte_fraction"] == r["byte_s"] / 4.8e12
        rng = next(q for q in rows if q["size"] == r["size"] and q["method"] == "rng")
        assert math.isclose(r["generator_fraction"],
                            r["normals"] / 7 * rng["median"] / r["median"])
    assert by_size["a"] == {5} and all(len(n) == 1 for n in by_size.values())
    assert ("d", "exact") not in reasons                  # an error at c does not stop d


def test_the_device_mode_runs_on_the_cpu(tmp_path, monkeypatch):
    """--device cpu: the device mode's code path, wall time, a file of the same schema."""
    monkeypatch.setenv("EIT_DEVICE", "cpu")
    # an old process (a pytest worker 20 minutes in, as in CI): a call of main() has its own
    # budget, from the call
    monkeypatch.setattr(benchmark, "since_start", lambda: 1e6)
    monkeypatch.setattr(benchmark, "DEVICE_QUICK", [
        ("hr18", [("d = 4", 4, 4, 4, 1, 3)]), ("ab19", [("n = 6", 6, 2, 5, 3, 2)]),
        ("gram", [("N = 3", 8, 2, 8, 3, 2)]), ("ab19", [("n = 2, N = 3", 2, 2, 5, 3, 2)])])
    out = tmp_path / "wall.json"
    assert benchmark.main(["--device", "cpu", "--quick", "--repeats", "2", "--out",
                           str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["mode"] == "device" and result["protocol"]["repeats"] == 2
    assert result["budget"]["complete"] and result["peak"]["bytes_s"] is None
    assert [s["method"] for s in result["budget"]["skipped"]] == ["exact"]   # N > n
    keys = {"workload", "size", "method", "seconds", "median", "normals", "flops", "bytes",
            "flop_s", "byte_s", "flop_fraction", "byte_fraction", "generator_fraction"}
    for row in result["rows"]:
        assert keys <= set(row) and len(row["seconds"]) == 2
        assert "explicit_normals" not in row
    methods = {(r["workload"], r["size"], r["method"]) for r in result["rows"]}
    assert ("hr18", "d = 4", "exact_vector") in methods
    assert ("gram", "N = 3", "rng_stream") in methods      # a CPU generator: the stream too


def test_bad_device_mode_arguments_are_refused(tmp_path, capsys):
    import pytest

    for argv, message in ((["--register", str(tmp_path / "x.json")], "--register"),
                          (["--device", "cpu", "--max-seconds", "0"], "--max-seconds")):
        with pytest.raises(SystemExit):
            benchmark.main(argv)
        assert message in capsys.readouterr().err
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            benchmark.main(["--device", "cuda"])
        assert "no CUDA device" in capsys.readouterr().err
