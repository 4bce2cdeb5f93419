"""The data store: provenance written by the library, names and checksums verified."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from eit.core import store
from eit.core.paths import book_root


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A throw-away book root with an empty data/ folder."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("EIT_BOOK_ROOT", str(tmp_path))
    monkeypatch.setenv("EIT_SCALE", "paper")
    monkeypatch.delenv("EIT_SEED", raising=False)
    return tmp_path


def test_the_committed_data_folder_verifies():
    """Every committed file of data/ has a checksum, and every result its provenance."""
    assert store.verify(book_root() / "data") == []


def test_save_and_load_round_trip(book):
    store.save_result("part/result", {"x": np.arange(3.0)}, seed=1, command="cmd",
                      meta={"width": 10, "sha256": "forged", "name": "forged"})
    arrays, prov = store.load_result("part/result")
    assert arrays["x"].tolist() == [0.0, 1.0, 2.0]
    assert prov["name"] == "part/result" and prov["meta"]["sha256"] == "forged"
    assert prov["sha256"] != "forged" and prov["scale"] == "paper"
    assert store.verify(book / "data") == []


def test_swapped_results_fail(book):
    for name, value in (("a", 1.0), ("b", 2.0)):
        store.save_result(name, {"x": np.array([value])}, seed=1, command="cmd")
    data = book / "data"
    for ext in (".json", ".npz"):
        (data / f"a{ext}").rename(data / f"tmp{ext}")
        (data / f"b{ext}").rename(data / f"a{ext}")
        (data / f"tmp{ext}").rename(data / f"b{ext}")
    with pytest.raises(store.DataError, match="swapped"):
        store.load_result("a")
    assert any("swapped" in line for line in store.verify(data))


def test_corrupted_files_fail(book):
    store.save_result("r", {"x": np.ones(4)}, seed=1, command="cmd")
    data = book / "data"
    (data / "r.json").write_text("{not json")
    with pytest.raises(store.DataError, match="not valid JSON"):
        store.load_result("r")
    store.save_result("r", {"x": np.ones(4)}, seed=1, command="cmd")
    raw = bytearray((data / "r.npz").read_bytes())
    raw[-5] ^= 0xFF
    (data / "r.npz").write_bytes(bytes(raw))
    with pytest.raises(store.DataError, match="checksum"):
        store.load_result("r")
    assert store.verify(data)


def test_unlisted_and_missing_files_fail(book):
    store.save_result("r", {"x": np.ones(2)}, seed=1, command="cmd")
    data = book / "data"
    (data / "benchmarks").mkdir()
    (data / "benchmarks" / "cpu.json").write_text(json.dumps({"rows": []}))
    assert any("no checksum" in p for p in store.verify(data))
    store.update_manifest(data)
    assert store.verify(data) == []
    (data / "benchmarks" / "cpu.json").unlink()
    assert any("missing" in p for p in store.verify(data))


def test_smoke_mode_never_writes_into_data(book, monkeypatch):
    monkeypatch.setenv("EIT_SCALE", "smoke")
    path = store.save_result("r", {"x": np.ones(2)}, seed=1, command="cmd")
    assert "smoke-data" in str(path) and not (book / "data" / "r.npz").exists()


@pytest.mark.parametrize(("kwargs", "name"), [
    (dict(name="Bad Name", arrays={"x": [1.0]}), "name"),
    (dict(name="r", arrays={}), "arrays"),
    (dict(name="r", arrays={"x": [np.nan]}), "arrays"),
    (dict(name="r", arrays={"x": ["a"]}), "arrays"),
    (dict(name="r", arrays={"x": [1.0]}, seed=-1), "seed"),
    (dict(name="r", arrays={"x": [1.0]}, command=""), "command"),
    (dict(name="r", arrays={"x": [1.0]}, meta=[1]), "meta"),
])
def test_bad_arguments_are_named(book, kwargs, name):
    kwargs = {"seed": 1, "command": "cmd", **kwargs}
    with pytest.raises((ValueError, TypeError), match=name):
        store.save_result(kwargs.pop("name"), kwargs.pop("arrays"), **kwargs)


def test_data_is_resolved_from_the_book_root_not_the_library(tmp_path, monkeypatch):
    other = tmp_path / "other"
    shutil.copytree(book_root() / "data", other / "data")
    (other / "chapters").mkdir()
    (other / "_toc.yml").write_text("root: intro\n")
    monkeypatch.setenv("EIT_BOOK_ROOT", str(other))
    assert store.result_dir() == other / "data"


# -- issue 25: provenance, manifest, atomic and concurrent writes ---------------------------------
def _files(data):
    return {p.relative_to(data).as_posix(): p.read_bytes() for p in sorted(data.rglob("*"))
            if p.is_file()}


def test_a_default_scale_save_never_replaces_a_paper_result(book, monkeypatch):
    store.save_result("part/fig", {"x": np.arange(5.0)}, seed=7, command="./book paper-scale x")
    data = book / "data"
    before = _files(data)
    monkeypatch.setenv("EIT_SCALE", "default")
    with pytest.raises(store.DataError, match="part/fig"):
        store.save_result("part/fig", {"x": np.ones(2)}, seed=0, command="made up")
    assert _files(data) == before                       # nothing written, manifest untouched
    store.save_result("part/fig", {"x": np.ones(2)}, seed=0, command="made up", replace=True)
    arrays, prov = store.load_result("part/fig")
    assert prov["scale"] == "default" and arrays["x"].tolist() == [1.0, 1.0]
    monkeypatch.setenv("EIT_SCALE", "paper")            # a paper-scale re-run may replace it
    store.save_result("part/fig", {"x": np.zeros(1)}, seed=7, command="./book paper-scale x")
    with pytest.raises(TypeError, match="replace"):
        store.save_result("part/fig", {"x": np.zeros(1)}, seed=7, command="c", replace=1)


def test_load_checks_the_metadata_against_the_manifest(book):
    store.save_result("r", {"x": np.ones(3)}, seed=1, command="cmd", meta={"n": 10})
    info = book / "data" / "r.json"
    prov = json.loads(info.read_text())
    prov["meta"]["n"] = 1000                            # valid JSON, same arrays checksum
    info.write_text(json.dumps(prov, indent=2) + "\n")
    with pytest.raises(store.DataError, match=r"r\.json does not match its checksum"):
        store.load_result("r")
    store.update_manifest(book / "data")
    assert store.load_result("r")[1]["meta"]["n"] == 1000


def test_load_checks_the_arrays_against_the_manifest_and_lists_both(book):
    store.save_result("r", {"x": np.ones(3)}, seed=1, command="cmd")
    data = book / "data"
    buffer = io.BytesIO()
    np.savez_compressed(buffer, x=np.zeros(3))
    (data / "r.npz").write_bytes(buffer.getvalue())     # and a provenance that matches it
    prov = json.loads((data / "r.json").read_text())
    prov["sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    (data / "r.json").write_text(json.dumps(prov))
    with pytest.raises(store.DataError, match=r"r\.(npz|json) does not match its checksum"):
        store.load_result("r")
    store.save_result("r", {"x": np.ones(3)}, seed=1, command="cmd")
    lines = [ln for ln in (data / "SHA256SUMS").read_text().splitlines()
             if not ln.endswith("r.json")]
    (data / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    with pytest.raises(store.DataError, match=r"r\.json has no checksum"):
        store.load_result("r")
    (data / "SHA256SUMS").unlink()
    with pytest.raises(store.DataError, match="SHA256SUMS"):
        store.load_result("r")


def test_the_committed_manifest_covers_the_metadata():
    data = book_root() / "data"
    listed = (data / "SHA256SUMS").read_text()
    for info in data.rglob("*.json"):
        assert f"  {info.relative_to(data).as_posix()}\n" in listed


def test_load_checks_the_expected_provenance(book):
    store.save_result("r", {"x": np.ones(3)}, seed=5, command="./book paper-scale c.md")
    assert store.load_result("r", scale="paper", seed=5, command="./book paper-scale c.md")
    for key, value in (("scale", "default"), ("seed", 6), ("command", "other")):
        with pytest.raises(store.DataError, match=f"'r'.*{key}"):
            store.load_result("r", **{key: value})


def test_paper_scale_result_checks_the_chapter_and_the_seed(book, monkeypatch):
    assert store.paper_scale_result("p/r", {"x": np.ones(2)}, seed=3, chapter="p/01.md")
    monkeypatch.setenv("EIT_SCALE", "default")
    stored, prov = store.paper_scale_result("p/r", {}, seed=3, chapter="p/01.md")
    assert prov["command"] == "./book paper-scale chapters/p/01.md"
    with pytest.raises(store.DataError, match="seed"):
        store.paper_scale_result("p/r", {}, seed=4, chapter="p/01.md")
    with pytest.raises(store.DataError, match="command"):
        store.paper_scale_result("p/r", {}, seed=3, chapter="p/02.md")


@pytest.mark.parametrize("meta", [{"f": object()}, {"x": float("nan")}, {1.5: "key"}])
def test_bad_meta_is_refused_before_anything_is_written(book, meta):
    with pytest.raises((TypeError, ValueError), match="meta"):
        store.save_result("r", {"x": np.ones(2)}, seed=1, command="cmd", meta=meta)
    assert _files(book / "data") == {}                  # no orphan .npz, no manifest


def test_corrupted_metadata_and_arrays_name_the_file(book):
    store.save_result("r", {"x": np.ones(4)}, seed=1, command="cmd")
    data = book / "data"
    raw = bytearray((data / "r.json").read_bytes())
    raw[10] = 0xFF                                      # not UTF-8 any more
    (data / "r.json").write_bytes(bytes(raw))
    with pytest.raises(store.DataError, match=r"r\.json"):
        store.load_result("r")
    (data / "r.npz").write_bytes(b"not a zip file")     # a bad .npz that its checksums cover
    prov = {**json.loads(json.dumps({"name": "r", "seed": 1, "command": "c", "scale": "paper",
                                     "device": "d", "date": "d", "python": "3",
                                     "versions": {}})),
            "sha256": hashlib.sha256(b"not a zip file").hexdigest()}
    (data / "r.json").write_text(json.dumps(prov))
    store.update_manifest(data)
    with pytest.raises(store.DataError, match=r"r\.npz"):
        store.load_result("r")
    (data / "r.json").unlink()
    with pytest.raises(store.DataError, match="partial"):
        store.load_result("r")


def test_concurrent_saves_from_threads(book):
    def work(i):
        for j in range(50):
            store.save_result(f"t/r{i}", {"x": np.full(3, float(j))}, seed=j, command="cmd")
            store.save_result("t/shared", {"x": np.full(3, float(i))}, seed=i, command="cmd")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    data = book / "data"
    assert store.verify(data) == []
    assert not [p for p in data.rglob("*") if p.name.endswith(".tmp")]
    assert store.load_result("t/r0")[0]["x"].tolist() == [49.0] * 3


def test_concurrent_saves_from_processes(book):
    script = ("import numpy as np, sys\n"
              "from eit.core import store\n"
              "for j in range(100):\n"
              "    name = 'p/shared' if j % 2 else f'p/r{sys.argv[1]}'\n"
              "    store.save_result(name, {'x': np.full(3, float(j))}, seed=j, command='c')\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], stderr=subprocess.PIPE,
                              env={**os.environ, "OMP_NUM_THREADS": "1"}) for i in range(2)]
    errors = [p.communicate(timeout=300)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    data = book / "data"
    assert store.verify(data) == []
    assert not [p for p in data.rglob("*") if p.name.endswith(".tmp")]
