"""The benchmark reader (eit.core.benchmarks) on the committed file and on bad input."""

from __future__ import annotations

import json
import statistics

import pytest

from eit.core import benchmarks
from eit.core.paths import data_dir


def test_committed_file_pairs_every_method_of_a_size():
    bench = benchmarks.load()
    assert bench.rows and bench.sizes
    for w, sizes in bench.sizes.items():
        for s in sizes:
            ratio, per_repeat = bench.paired(w, s, "batched", "rng")
            a = bench.row(w, s, "batched")["seconds"]
            b = bench.row(w, s, "rng")["seconds"]
            assert ratio == statistics.median(b) / statistics.median(a)
            assert per_repeat == [y / x for x, y in zip(a, b)]
            assert all(len(r) == 7 for r in bench.timing_rows(w))
    assert len(bench.exact_draw_rows()) == sum(len(s) for s in bench.sizes.values())


def _rows(**extra):
    return [dict(workload="w", size="s", method=m, seconds=[1.0, 2.0], median=1.5, **extra)
            for m in ("a", "b")]


def test_duplicate_rows_and_unpaired_repeats_are_refused():
    with pytest.raises(ValueError, match="rows"):
        benchmarks.Benchmark({}, {}, _rows() + _rows())
    rows = _rows()
    rows[1]["seconds"] = [1.0]
    with pytest.raises(ValueError, match="not paired"):
        benchmarks.Benchmark({}, {}, rows).paired("w", "s", "a", "b")
    with pytest.raises(KeyError, match="no benchmark row"):
        benchmarks.Benchmark({}, {}, _rows()).row("w", "s", "c")


def test_load_names_a_missing_or_incomplete_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="path"):
        benchmarks.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="provenance"):
        benchmarks.load(bad)


def _device_file(tmp_path, cpu):
    """A device-mode file with the CPU file's rows as if timed on a GPU (100 times faster),
    plus a larger batch, in the format tools/benchmark.py --device writes."""
    rows = []
    for r in cpu.rows:
        if r["method"] == "rng_stream":
            continue                         # a CPU stream: not in a device file
        seconds = [t / 100 for t in r["seconds"]]
        rows.append({**r, "seconds": seconds, "median": statistics.median(seconds),
                     "flops": 1e9, "bytes": 2e9, "flop_s": 1e9 / r["median"] * 100,
                     "byte_s": 2e9 / r["median"] * 100, "flop_fraction": None,
                     "byte_fraction": 0.5, "generator_fraction": 0.25})
    big = [{**r, "size": "d = 100, 10k nets", "nets": 10_000} for r in rows
           if r["workload"] == "hr18" and r["size"] == "d = 100"]
    raw = {"schema": 2, "mode": "device",
           "protocol": {"repeats": 5, "total_wall_s": 42.0, "threads": 16},
           "provenance": {"device": "cuda: NVIDIA H200", "date": "2026-11-27 12:00 UTC",
                          "versions": {"torch": "2.11.0+cu130", "numpy": "2.5.2"}},
           "peak": {"fp64_tensor_flop_s": 67e12, "fp64_flop_s": 34e12, "bytes_s": 4.8e12},
           "budget": {"complete": False, "skipped": [{"workload": "hr18", "size": "x",
                                                      "method": "lean_loop",
                                                      "reason": "budget"}]},
           "rows": rows + big}
    path = tmp_path / "cuda.json"
    path.write_text(json.dumps(raw))
    return path


def test_the_cuda_file_is_optional_and_read_side_by_side(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eit.plotting.benchmarks import side_by_side

    assert benchmarks.load_cuda(tmp_path / "none.json") is None
    cpu = benchmarks.load()
    assert not cpu.wall and cpu.peak == {} and cpu.budget == {}
    with pytest.raises(ValueError, match="device-mode"):
        benchmarks.load_cuda(data_dir() / "benchmarks" / "cpu.json")
    cuda = benchmarks.load_cuda(_device_file(tmp_path, cpu))
    assert cuda.wall and cuda.peak["bytes_s"] == 4.8e12
    assert "NVIDIA H200" in cuda.summary() and "cut by the budget" in cuda.summary()
    rows = cuda.device_rows("hr18")
    assert all(len(r) == 9 for r in rows) and rows[0][5] == "-" and rows[0][7] == "50"
    pairs = benchmarks.side_by_side_rows(cpu, cuda, "hr18")
    assert pairs and all(r[-1] == "100" for r in pairs)
    assert not any(r[0] == "d = 100, 10k nets" for r in pairs)     # not in the CPU file
    assert len(cuda.exact_draw_rows()) == sum(len(s) for s in cuda.sizes.values())
    fig, axes = plt.subplots(1, 2)
    side_by_side(axes, {"CPU": cpu, "GPU": cuda}, "hr18")
    assert axes[0].get_ylim() == axes[1].get_ylim()
    assert len(axes[1].get_xticks()) == len(cuda.sizes["hr18"]) == 4
    with pytest.raises(ValueError, match="axes"):
        side_by_side(axes[:1], {"CPU": cpu, "GPU": cuda}, "hr18")
