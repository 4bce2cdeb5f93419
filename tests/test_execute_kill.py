"""tools/execute.py: a killed run stops, and a finished run is never lost to its bookkeeping.

A synthetic chapter (in a temporary folder) writes a file when its cell starts, sleeps, then
writes a marker: killing ``tools/execute.py`` while it sleeps must stop the worker and the
kernel (nothing writes the marker or the notebook afterwards) and leave no kernel connection
file (they hold the kernel's key) in the temporary folder or the Jupyter runtime folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
try:
    import execute as ex
finally:
    sys.path.remove(str(ROOT / "tools"))

CHAPTER = """---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
---
# A chapter killed while it runs

```{{code-cell}} ipython3
import pathlib, time
pathlib.Path({started!r}).write_text("started")
time.sleep({sleep})
pathlib.Path({marker!r}).write_text("finished")
print("finished")
```
"""


def chapter(tmp_path: Path, sleep: float) -> Path:
    source = tmp_path / "01-synthetic.md"
    source.write_text(CHAPTER.format(started=str(tmp_path / "started"),
                                     marker=str(tmp_path / "marker"), sleep=sleep))
    return source


def start(tmp_path: Path, source: Path) -> tuple[subprocess.Popen, dict]:
    """``tools/execute.py`` on ``source`` with its own temporary and runtime folders."""
    dirs = {"tmp": tmp_path / "tmp", "runtime": tmp_path / "runtime", "out": tmp_path / "out"}
    dirs["tmp"].mkdir()
    dirs["runtime"].mkdir()
    env = {**os.environ, "EIT_SCALE": "default", "TMPDIR": str(dirs["tmp"]),
           "JUPYTER_RUNTIME_DIR": str(dirs["runtime"])}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "execute.py"), str(source), "--output-dir",
         str(dirs["out"]), "--jobs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return proc, dirs


def family_once_running(proc: subprocess.Popen, started: Path, limit: float = 60
                        ) -> list[psutil.Process]:
    """Every process under ``proc`` once the chapter's cell runs (the kernel among them)."""
    deadline = time.time() + limit
    while not started.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.time() < deadline, "the chapter's cell never started"
        time.sleep(0.1)
    family = psutil.Process(proc.pid).children(recursive=True)
    assert any("ipykernel" in command(p) for p in family), "no kernel found"
    return family


def running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def command(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def wait_gone(family: list[psutil.Process], limit: float = 10) -> list[str]:
    """The command lines of those still running after ``limit`` seconds."""
    deadline = time.time() + limit
    while True:
        alive = [command(p) for p in family if running(p)]
        if not alive or time.time() > deadline:
            return alive
        time.sleep(0.2)


def leftovers(dirs: dict) -> list[Path]:
    """Kernel connection files and private runtime folders left behind."""
    return sorted([*dirs["tmp"].rglob("*"), *dirs["runtime"].rglob("*")])


def test_sigkill_of_the_parent_stops_worker_and_kernel(tmp_path):
    source = chapter(tmp_path, sleep=2)
    proc, dirs = start(tmp_path, source)
    family = family_once_running(proc, tmp_path / "started")
    proc.kill()  # SIGKILL to tools/execute.py alone, not to its process group
    proc.communicate(timeout=10)
    alive = wait_gone(family)
    assert not alive, f"left running: {alive}"
    time.sleep(2.5)  # longer than what was left of the cell's sleep
    assert not (tmp_path / "marker").exists(), "the kernel finished the chapter after the kill"
    assert not dirs["out"].exists() or not any(dirs["out"].rglob("*")), "a notebook was written"
    assert not leftovers(dirs), f"left behind: {leftovers(dirs)}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["SIGINT", "SIGHUP"])
def test_an_interrupted_run_stops_and_cleans_up(tmp_path, signum):
    source = chapter(tmp_path, sleep=60)
    proc, dirs = start(tmp_path, source)
    family = family_once_running(proc, tmp_path / "started")
    assert list(dirs["tmp"].glob("eit-execute-*/kernel-*.json")), \
        "the kernel's connection file is not in the private runtime folder"
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    alive = wait_gone(family)
    assert not alive, f"left running: {alive}"
    assert not leftovers(dirs), f"left behind: {leftovers(dirs)}"
    assert not (tmp_path / "marker").exists()


def test_a_finished_chapter_is_written_where_jupyter_book_is_missing(tmp_path, monkeypatch):
    real = ex.md.version

    def version(name):
        if name == "jupyter-book":
            raise ex.md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(ex.md, "version", version)
    monkeypatch.setenv("MPLBACKEND", "agg")  # execute() sets it: restored after the test
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    (tmp_path / "runtime").mkdir()
    source = chapter(tmp_path, sleep=0)
    name, wall = ex.execute(source, timeout=60, output_dir=tmp_path / "out")
    target = tmp_path / "out" / "01-synthetic.ipynb"
    nb = json.loads(target.read_text())
    meta = nb["metadata"]["eit"]
    assert {"wall_time_s", "device", "scale", "executed", "python", "versions"} <= set(meta)
    assert meta["versions"]["jupyter-book"] == ex.NOT_INSTALLED
    assert meta["versions"]["nbval"] == real("nbval")
    assert meta["wall_time_s"] == round(wall, 1) and name.endswith("01-synthetic.md")
    assert "finished" in json.dumps(nb["cells"])
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temp file
    assert target.stat().st_mode & 0o044, "the notebook is not readable by others"
    assert not any((tmp_path / "runtime").iterdir()), "the connection file was left behind"


def test_versions_never_raise():
    assert ex.version("eit-no-such-distribution") == ex.NOT_INSTALLED
    assert ex.version("numpy") != ex.NOT_INSTALLED


def test_an_orphaned_worker_writes_nothing(tmp_path):
    target = tmp_path / "out" / "chapter.ipynb"
    gone = os.getppid() + 1_000_000  # not this process's parent
    with pytest.raises(ex.Orphaned):
        ex.write_atomically("{}", target, parent=gone)
    assert not any(target.parent.iterdir())
    ex.write_atomically("{}", target, parent=os.getppid())
    assert target.read_text() == "{}"
    assert [p.name for p in target.parent.iterdir()] == [target.name]
