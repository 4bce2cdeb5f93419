"""The book's command-line tools: execution reports progress and cleans up when interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent

SLOW_CHAPTER = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# A slow chapter

```{code-cell} ipython3
import time
time.sleep(120)
```
"""


def test_an_interrupted_run_leaves_no_worker_or_kernel(tmp_path):
    chapter = tmp_path / "01-slow.md"
    chapter.write_text(SLOW_CHAPTER)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "execute.py"), str(chapter), "--output-dir",
         str(tmp_path / "out"), "--jobs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "EIT_SCALE": "default"})
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until a kernel runs
        if any("ipykernel" in " ".join(c.cmdline()) for c in parent.children(recursive=True)):
            break
        time.sleep(0.5)
    family = parent.children(recursive=True)
    assert family, "no worker started"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "executing 1 chapter(s)" in out and "interrupted" in out
    deadline = time.time() + 10  # the helpers (janitor, resource tracker) exit on their own
    while (alive := [p for p in family if running(p)]) and time.time() < deadline:
        time.sleep(0.2)
    assert not alive, f"left running: {alive}"


def running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_chapters_are_scheduled_longest_first(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from execute import longest_first
    finally:
        sys.path.remove(str(ROOT / "tools"))
    times = {"01-a": 5.0, "02-b": 40.0, "03-c": None, "04-d": 12.5}
    for name, wall in times.items():
        (tmp_path / f"{name}.md").write_text("")
        meta = {} if wall is None else {"eit": {"wall_time_s": wall}}
        (tmp_path / f"{name}.ipynb").write_text(
            json.dumps({"cells": [], "metadata": meta}))
    order = [p.stem for p in longest_first(sorted(tmp_path.glob("*.md")))]
    assert order == ["02-b", "04-d", "01-a", "03-c"]


def test_book_refuses_a_thread_count_that_is_not_a_positive_integer():
    """EIT_THREADS=0 used to reach OMP_NUM_THREADS, where the libraries fall back silently."""
    for bad in ("0", "-2", "two", "1.5"):
        out = subprocess.run(["bash", str(ROOT / "book"), "no-such-command"], cwd=ROOT,
                             env={**os.environ, "EIT_THREADS": bad}, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 2 and "EIT_THREADS must be a positive integer" in out.stderr
        assert f"got '{bad}'" in out.stderr
