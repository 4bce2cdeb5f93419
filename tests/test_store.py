"""The data store: provenance written by the library, names and checksums verified."""

from __future__ import annotations

import json
import shutil

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
