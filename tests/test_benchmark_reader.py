"""The benchmark reader (eit.core.benchmarks) on the committed file and on bad input."""

from __future__ import annotations

import json
import statistics

import pytest

from eit.core import benchmarks


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
