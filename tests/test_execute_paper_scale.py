"""tools/paper_scale.py: the paper-scale runs in priority order, within a budget, resumable.

The plan's logic is tested on a synthetic book (a temporary folder with ``_toc.yml`` and
``chapters/``, pointed at by ``EIT_BOOK_ROOT``) whose tiny chapters store their results through
``eit.core.store.paper_scale_result`` at smoke scale (into its ``_build/smoke-data/``): a run
is interrupted while a chapter runs, then resumed. The real plan is checked against the
chapters: every chapter with a paper-scale path is listed with the result names it uses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
try:
    import paper_scale as ps
finally:
    sys.path.remove(str(ROOT / "tools"))

CHAPTER = """---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
---
# A synthetic paper-scale chapter

```{{code-cell}} ipython3
import pathlib, time

pathlib.Path("{stem}.started").write_text("started")
while pathlib.Path("{stem}.hold").exists():  # the test holds the chapter here
    time.sleep(0.1)
from eit.core.store import paper_scale_result

paper_scale_result("part/{stem}", lambda: {{"x": [1.0, 2.0]}}, seed=0,
                   chapter="part/{stem}.md")
```
"""

PLAN = """
[[chapter]]
source = "chapters/part/01-fast.md"
results = ["part/01-fast"]
gpu_s = 1
cpu_s = 1
smoke_s = 1
needs_gpu = false

[[chapter]]
source = "chapters/part/02-held.md"
results = ["part/02-held"]
gpu_s = 2
cpu_s = 2
smoke_s = 2
needs_gpu = false

[[chapter]]
source = "chapters/part/03-gpu-only.md"
results = ["part/03-gpu-only"]
gpu_s = 1
cpu_s = 1
smoke_s = 1
needs_gpu = true

[[chapter]]
source = "chapters/part/04-too-long.md"
results = ["part/04-too-long"]
gpu_s = 1e6
cpu_s = 1e6
smoke_s = 1e6
needs_gpu = false
"""


def synthetic_book(tmp_path: Path) -> tuple[Path, Path]:
    book = tmp_path / "book"
    part = book / "chapters" / "part"
    part.mkdir(parents=True)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    for stem in ("01-fast", "02-held", "03-gpu-only", "04-too-long"):
        (part / f"{stem}.md").write_text(CHAPTER.format(stem=stem))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    return book, plan


def command(book: Path, plan: Path, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / "tools" / "paper_scale.py"), "--plan", str(plan),
            "--scale", "smoke", "--device", "cpu", *args]


def environment(book: Path, tmp_path: Path) -> dict:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "EIT_BOOK_ROOT": str(book), "EIT_SCALE": "smoke",
            "TMPDIR": str(tmp_path / "tmp")}


def stored(book: Path) -> list[str]:
    """The names stored with smoke-scale provenance in the synthetic book."""
    folder = book / "_build" / "smoke-data"
    return sorted(json.loads(p.read_text())["name"] for p in folder.rglob("*.json")
                  if json.loads(p.read_text()).get("scale") == "smoke")


def line(out: str, status: str, stem: str) -> bool:
    return re.search(rf"^\s+{re.escape(status)}\s+chapters/part/{stem}\.md", out, re.M) is not None


def test_an_interrupted_budget_run_resumes_where_it_stopped(tmp_path):
    book, plan = synthetic_book(tmp_path)
    part = book / "chapters" / "part"
    hold = part / "02-held.hold"
    hold.write_text("")
    env = environment(book, tmp_path)
    proc = subprocess.Popen(command(book, plan, "--budget", "1000"), cwd=book, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 90
    while not (part / "02-held.started").exists():  # the first chapter is done by then
        assert proc.poll() is None, proc.communicate()[0]
        assert time.time() < deadline, "the second chapter never started"
        time.sleep(0.1)
    family = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert line(out, "done", "01-fast") and line(out, "interrupted", "02-held"), out
    assert stored(book) == ["part/01-fast"]
    time.sleep(0.5)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not any((tmp_path / "tmp").iterdir()), "a runtime folder was left behind"

    hold.unlink()
    again = subprocess.run(command(book, plan, "--budget", "1000"), cwd=book, env=env,
                           capture_output=True, text=True, timeout=120)
    out = again.stdout
    assert again.returncode == 0, out + again.stderr
    assert line(out, "skipped (stored)", "01-fast"), out
    assert line(out, "done", "02-held"), out
    assert line(out, "skipped (needs a GPU)", "03-gpu-only"), out
    assert line(out, "skipped (budget)", "04-too-long"), out
    assert "1 done, 1 skipped (stored), 1 skipped (budget), 1 skipped (needs a GPU)" in out
    assert stored(book) == ["part/01-fast", "part/02-held"]
    assert (book / "_build" / "smoke-scale" / "chapters" / "part" / "02-held.ipynb").exists()
    assert not (book / "data").exists(), "smoke scale wrote into data/"


def test_the_plan_is_listed_without_running(tmp_path):
    book, plan = synthetic_book(tmp_path)
    res = subprocess.run(command(book, plan, "--list", "--budget", "2"), cwd=book,
                         env=environment(book, tmp_path), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    verdicts = re.findall(r"would be: (.+)", res.stdout)
    # 1 s fits in 2 s; then 2 s no longer fits in the 1 s left
    assert verdicts == ["run", "skipped (budget)", "skipped (needs a GPU)",
                        "skipped (budget)"], res.stdout
    assert not (book / "_build").exists() and not (book / "data").exists()


def test_the_plan_lists_every_paper_scale_chapter_with_its_results():
    plan = ps.load_plan(ps.PLAN, ROOT)
    listed = {e.source: e for e in plan}
    with_path = {p.resolve() for p in (ROOT / "chapters").glob("*/*.md")
                 if "paper_scale_result" in p.read_text()}
    assert set(listed) == with_path
    for source, entry in listed.items():
        text = source.read_text()
        for name in entry.results:
            assert f'"{name}"' in text, f"{source.name} does not store {name!r}"
    for entry in plan:  # at smoke scale: the recorded default-scale wall time
        assert 0 < entry.estimate(gpu=False, scale="smoke") < entry.cpu_s
    first = [str(e.source.relative_to(ROOT)) for e in plan[:2]]
    assert first == ["chapters/hanin-rolnick-2018/04-convolutional.md",
                     "chapters/meterez-et-al-2024/05-no-gradient-explosion.md"]


def test_a_bad_plan_is_refused(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[[chapter]]\nsource = "chapters/x.md"\nresults = []\ngpu_s = 1\n'
                    'cpu_s = 1\nneeds_gpu = false\n')
    try:
        ps.load_plan(plan, tmp_path)
    except ValueError as err:
        assert "results" in str(err)
    else:
        raise AssertionError("an empty result list was accepted")


class TestStoredResults:
    """What the plan counts as stored: the store's own files, with provenance of the scale."""

    def test_a_result_saved_at_smoke_scale_counts_only_at_smoke_scale(self, tmp_path,
                                                                        monkeypatch):
        from eit.core import store

        book, _ = synthetic_book(tmp_path)
        monkeypatch.setenv("EIT_BOOK_ROOT", str(book))
        monkeypatch.setenv("EIT_SCALE", "smoke")
        assert not ps.stored("part/r", "smoke")
        store.save_result("part/r", {"x": [1.0]}, seed=0, command="test")
        assert ps.stored("part/r", "smoke") and not ps.stored("part/r", "paper")
        monkeypatch.setenv("EIT_SCALE", "paper")  # data/ of the synthetic book: empty
        assert not ps.stored("part/r", "paper")
        assert not (book / "data").exists()
