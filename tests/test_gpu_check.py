"""``tools/gpu_check.py`` (``./book gpu-check``): the plan, the report written stage by stage
(with a failed and a timed-out stage), the JUnit parsing, the versions with a missing package,
the wheels, the refusal without CUDA, a CPU run of one chapter, and the status page's block."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import torch
from docutils import nodes
from docutils.core import publish_from_doctree
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "gpu_check.py"

sys.path.insert(0, str(ROOT / "tools"))
try:
    import gpu_check as gc
finally:
    sys.path.remove(str(ROOT / "tools"))

CHAPTERS = ["chapters/part-a/01-x.ipynb", "chapters/part-b/02-y.ipynb",
            "chapters/part-c/03-z.ipynb"]
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="chapters.part-a.01-x.ipynb" name="Cell 0" time="1.5" />
<testcase classname="chapters.part-a.01-x.ipynb" name="Cell 1" time="0.5"><properties>
<property name="eit_tolerated" value="('cell 1', ['mean: 1.01 vs 1.02, within 2 SE'])" />
</properties></testcase>
<testcase classname="chapters.part-a.01-x.ipynb" name="Cell 2" time="0.25">
<failure message="Notebook cell execution failed&#10;more">traceback</failure></testcase>
<testcase classname="chapters.part-b.02-y.ipynb" name="Cell 0" time="2">
<error message="RuntimeError: Expected all tensors to be on the same device">tb</error>
</testcase>
<testcase classname="chapters.part-b.02-y.ipynb" name="Cell 1" time="0">
<skipped message="skip" /></testcase>
</testsuite></testsuites>
"""


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != "EIT_DEVICE"})


# --------------------------------------------------------------------------- the plan

def test_the_plan_runs_the_book_s_test_command_the_benchmark_and_paper_scale(tmp_path):
    stages = gc.plan(mode="cuda", jobs=16, out_dir=ROOT / "data" / "gpu")
    assert [s.name for s in stages] == ["cuda-tests", "nbval", "benchmark", "paper-scale"]
    nbval = stages[1].command()
    for flags in (["chapters", "--nbval", "--nbval-current-env"],
                  ["--nbval-sanitize-with", "nbval_sanitize.cfg"], ["-n", "16"],
                  ["--dist", "loadscope"], ["-p", "no:cacheprovider"]):
        i = nbval.index(flags[0])
        assert nbval[i:i + len(flags)] == flags, nbval
    assert "--junitxml" in nbval
    assert stages[2].command(60)[1:] == ["tools/benchmark.py", "--device", "cuda", "--out",
                                         "data/benchmarks/cuda.json", "--max-seconds", "60"]
    assert stages[3].command(100)[1:] == ["tools/paper_scale.py", "--scale", "paper",
                                          "--budget", "100"]
    # every stage within its share, all of them within the budget even if each uses it all
    spent = 0.0
    for stage in stages:
        t = gc.stage_timeout(stage, 450, 450 - spent)
        assert t > 0 and gc.inner_limit(t) < t
        spent += t
    assert spent <= 450 - gc.RESERVE

    cpu = gc.plan(mode="cpu", jobs=16, out_dir=tmp_path, chapters=CHAPTERS[:1],
                  stages=("nbval", "benchmark", "paper-scale"))
    assert cpu[0].command()[cpu[0].command().index("-n") + 1] == "1"
    assert CHAPTERS[0] in cpu[0].command() and "chapters" not in cpu[0].command()
    assert cpu[1].command()[1:5] == ["tools/benchmark.py", "--device", "cpu", "--out"]
    assert Path(cpu[1].command()[5]).parent == tmp_path  # never data/benchmarks on the CPU
    assert cpu[2].command()[2:4] == ["--scale", "smoke"]


def test_the_environment_is_the_book_s_and_eit_is_this_checkout_s_lib(tmp_path):
    shim = gc.eit_shim(tmp_path / "path")
    env = gc.book_environment({"EIT_SEED": "3", "PYTHONPATH": "/x"}, "cuda", [str(shim)])
    assert env["EIT_SCALE"] == "default" and "EIT_SEED" not in env
    assert env["PYTHONHASHSEED"] == "0" and env["OMP_NUM_THREADS"] == "1"
    assert env["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"
    assert env["EIT_BOOK_ROOT"] == str(ROOT) and env["EIT_DEVICE"] == "cuda"
    assert env["EIT_GUARD"] == "0"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(shim), "/x"]
    out = subprocess.run([sys.executable, "-c", "import eit; print(eit.__file__)"],
                         cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(shim)})
    path = Path(out.stdout.strip())
    assert path.parent == shim / "eit" and path.resolve() == (ROOT / "lib" / "__init__.py")


def test_cuda_tests_are_found_by_name_and_mark(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text(textwrap.dedent("""
        import pytest, torch
        def test_cuda_matmul(): pass
        def test_plain(): pass
        @pytest.mark.cuda
        def test_marked(): pass
        @pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")
        def test_needs_a_device(): pass
        class TestThings:
            def test_gpu_copy(self): pass
            def test_other(self): pass
        """))
    (tests / "test_b.py").write_text(
        "import pytest\npytestmark = pytest.mark.gpu\ndef test_one(): pass\n")
    (tests / "test_gpu_check.py").write_text("def test_gpu_x(): pass\n")
    assert gc.cuda_tests(tmp_path) == [
        "tests/test_a.py::test_cuda_matmul", "tests/test_a.py::test_marked",
        "tests/test_a.py::test_needs_a_device", "tests/test_a.py::TestThings::test_gpu_copy",
        "tests/test_b.py::test_one"]
    assert gc.cuda_tests(tmp_path / "nowhere") == []


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    out = _run("--dry-run", "--out-dir", str(tmp_path / "report"), timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "budget 450 s" in text
    for words in ("pytest chapters --nbval --nbval-current-env", "--junitxml",
                  "tools/benchmark.py --device cuda --out data/benchmarks/cuda.json "
                  "--max-seconds", "tools/paper_scale.py --scale paper --budget",
                  "EIT_SCALE=default", "PYTHONHASHSEED=0"):
        assert words in text, words
    assert not (tmp_path / "report").exists()


# --------------------------------------------------------------------------- versions, wheels

def test_versions_are_recorded_without_failing_on_a_missing_package():
    got = gc.versions(("numpy", "no-such-distribution-eit"))
    assert got == {"numpy": md.version("numpy"), "no-such-distribution-eit": None}
    imports = gc.try_imports(("json", "no_such_module_eit"))
    assert imports["json"] == "ok"
    assert imports["no_such_module_eit"].startswith("ModuleNotFoundError")
    info = gc.torch_info()
    assert info["torch"] == torch.__version__
    assert info["cuda_available"] == torch.cuda.is_available()
    assert set(gc.versions()) == set(gc.PACKAGES)  # jupyter-book among them, maybe missing


def test_the_wheel_list_is_pinned_as_the_book_pins_it(tmp_path):
    pins = dict(p.split("==") for p in gc.wheel_pins())
    need = {"nbval", "nbclient", "nbformat", "ipykernel", "jupyter-client", "jupyter-core",
            "jupytext", "haarpy", "traitlets", "pyzmq", "tornado", "ipython",
            "matplotlib-inline", "comm", "debugpy", "fastjsonschema", "jsonschema",
            "mdit-py-plugins", "sympy", "mpmath", "pyyaml", "typing-extensions"}
    assert need <= {gc.canonical(n) for n in pins}
    sys.path.insert(0, str(ROOT / "tools"))
    from lock import pins as locked

    required = locked(ROOT / "requirements.txt")
    for name, version in pins.items():
        if gc.canonical(name) in required:
            assert version in required[gc.canonical(name)], name
    cmd = gc.download_command(tmp_path)
    assert cmd[3:6] == ["download", "--no-deps", "--only-binary=:all:"]
    for flag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                 "any", "3.12", "cp"):
        assert flag in cmd


def test_wheels_already_installed_are_skipped(tmp_path):
    numpy = md.version("numpy")
    for name in (f"numpy-{numpy}-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "no_such_pkg_eit-1.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    todo, skipped = gc.select_wheels(tmp_path, tmp_path / "site")
    assert [w.name for w in todo] == ["no_such_pkg_eit-1.0-py3-none-any.whl"]
    assert skipped == [f"numpy {numpy}"]
    cmd = gc.install_command(todo, tmp_path / "site")
    assert cmd[3:7] == ["install", "--no-index", "--no-deps", "--upgrade"]
    assert cmd[cmd.index("--target") + 1] == str(tmp_path / "site")
    with pytest.raises(FileNotFoundError, match="--download-wheels"):
        gc.select_wheels(tmp_path / "empty", tmp_path / "site")


# --------------------------------------------------------------------------- junit

def test_junit_gives_each_chapter_its_cells(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    rows = {r["chapter"]: r for r in gc.chapter_rows(CHAPTERS, gc.parse_junit(path, CHAPTERS))}
    a, b, c = (rows[ch] for ch in CHAPTERS)
    assert (a["result"], a["passed"], a["failed"], a["tolerated"], a["time_s"]) == \
        ("failed", 2, 1, 1, 2.25)
    assert a["failed_cells"] == [{"cell": "Cell 2", "message": "Notebook cell execution failed"}]
    assert a["tolerated_cells"] == ["Cell 1"]
    assert (b["result"], b["passed"], b["failed"], b["skipped"]) == ("failed", 0, 1, 1)
    assert b["failed_cells"][0]["message"].startswith("RuntimeError: Expected all tensors")
    assert c["result"] == "not run"
    assert gc.chapter_of("chapters.new-part.04-w.ipynb", []) == "chapters/new-part/04-w.ipynb"


def test_pytest_records_cells_in_junit_and_live_through_xdist(tmp_path):
    """The property the nbval plugin sets on a tolerated cell reaches the JUnit file, and the
    live record of ``-p eit_gpu_check`` (written by the controller only) says the same."""
    (tmp_path / "test_t.py").write_text(textwrap.dedent("""
        def test_tolerated(request):
            request.node.user_properties.append(("eit_tolerated", ("cell 3", ["a", "b"])))
        def test_exact():
            pass
        def test_broken():
            raise RuntimeError("Expected all tensors to be on the same device")
        """))
    junit, live = tmp_path / "junit.xml", tmp_path / "live.jsonl"
    shim = gc.eit_shim(tmp_path / "path")
    out = subprocess.run([sys.executable, "-m", "pytest", "test_t.py", "-n", "1", "-q",
                          "-p", "no:cacheprovider", "--junitxml", str(junit),
                          "-p", "eit_gpu_check"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(shim), gc.LIVE: str(live)})
    assert out.returncode == 1, out.stdout + out.stderr
    (row,) = gc.parse_junit(junit, []).values()
    assert (row["passed"], row["failed"], row["tolerated"]) == (2, 1, 1)
    assert "RuntimeError" in row["failed_cells"][0]["message"]
    (chapter, again), = gc.parse_live(live).items()
    assert chapter == "test_t.py"
    assert {k: again[k] for k in ("passed", "failed", "tolerated", "tolerated_cells")} == \
        {"passed": 2, "failed": 1, "tolerated": 1, "tolerated_cells": ["test_tolerated"]}
    assert [c["cell"] for c in again["failed_cells"]] == ["test_broken"]
    assert len(live.read_text().splitlines()) == 3  # one line per test, none from the worker


# --------------------------------------------------------------------------- the report

class FakeRunner:
    """Stage results without running anything: nbval fails (and writes its JUnit file), the
    benchmark runs out of time, paper scale passes. Checks that the report on disk already
    holds the earlier stages when a stage starts."""

    def __init__(self, junit: Path, report: Path):
        self.junit, self.report, self.seen = junit, report, []
        self.t = 0.0

    def clock(self) -> float:
        return self.t

    def __call__(self, argv, *, env, timeout, log):
        on_disk = json.loads(self.report.read_text())
        self.seen.append([s["status"] for s in on_disk["stages"]])
        assert env["EIT_SCALE"] == "default" and timeout > 0
        command = " ".join(argv)
        log(f"running {command}\n")
        if "--nbval" in argv:
            self.junit.write_text(JUNIT)
            self.t += 100
            return 1, False, 100.0
        if "benchmark.py" in command:
            self.t += timeout
            return -2, True, timeout
        self.t += 30
        return 0, False, 30.0


def test_the_report_is_written_after_every_stage_with_failures_and_timeouts(tmp_path):
    data = tmp_path / "data"
    (data / "other").mkdir(parents=True)
    (data / "other" / "result.json").write_text("{}")
    other = f"{'0' * 64}  other/result.json\n"
    (data / "SHA256SUMS").write_text(other)
    reporter = gc.Reporter(data / "gpu", data=data, echo=False)
    junit = tmp_path / "junit.xml"
    runner = FakeRunner(junit, reporter.json_path)
    stages = gc.plan(mode="cuda", jobs=4, out_dir=data / "gpu", build_dir=tmp_path)
    stages[0].skip = "no library test is named or marked for CUDA"
    report = {"schema": gc.SCHEMA, "device": "NVIDIA H200", "started": gc.now(),
              "versions": gc.versions(("numpy", "no-such-distribution-eit"))}
    gc.run_all(stages, report, reporter, budget=450, clock=runner.clock,
               base_env={"EIT_SCALE": "default"},
               expected=CHAPTERS, junit=junit, runner=runner)
    reporter.close()
    reporter.write(report)

    # on disk before each stage: the earlier ones done, this one running
    assert runner.seen == [["skipped", "running", "not run", "not run"],
                           ["skipped", "failed", "running", "not run"],
                           ["skipped", "failed", "timed out", "running"]]
    saved = json.loads((data / "gpu" / "report.json").read_text())
    assert saved["versions"]["no-such-distribution-eit"] is None
    stages_ = {s["name"]: s for s in saved["stages"]}
    assert stages_["cuda-tests"]["status"] == "skipped"
    assert (stages_["nbval"]["status"], stages_["nbval"]["exit_code"]) == ("failed", 1)
    assert stages_["benchmark"]["status"] == "timed out" and stages_["benchmark"]["timed_out"]
    assert stages_["benchmark"]["command"].endswith(
        f"--max-seconds {int(gc.inner_limit(stages_['benchmark']['timeout_s']))}")
    assert (stages_["paper-scale"]["status"], stages_["paper-scale"]["wall_s"]) == ("passed", 30)
    assert saved["summary"] == {
        "chapters": 3, "chapters_passed": 0, "chapters_failed": 2, "chapters_not_run": 1,
        "cells_passed": 2, "cells_failed": 2, "cells_tolerated": 1, "stages_passed": 1,
        "stages_failed": 1, "stages_timed_out": 1, "stages_skipped": 1}
    log = (data / "gpu" / "report.log").read_text()
    assert "running " in log and "stage benchmark: timed out" in log
    manifest = (data / "SHA256SUMS").read_text()
    assert other in manifest
    for name in ("report.json", "report.log"):
        digest = hashlib.sha256((data / "gpu" / name).read_bytes()).hexdigest()
        assert f"{digest}  gpu/{name}\n" in manifest
    lines = manifest.splitlines()
    assert lines == sorted(lines, key=lambda line: line.partition("  ")[2])


def test_a_stage_stopped_before_its_junit_keeps_the_cells_that_finished(tmp_path):
    reporter = gc.Reporter(tmp_path / "out", echo=False)
    (stage,) = gc.plan(mode="cuda", jobs=4, out_dir=tmp_path, stages=("nbval",),
                       build_dir=tmp_path)
    live = Path(stage.env[gc.LIVE])

    def runner(argv, *, env, timeout, log):
        assert env[gc.LIVE] == str(live) and "eit_gpu_check" in argv
        with live.open("a") as f:
            for i, outcome in enumerate(["passed", "passed", "failed"]):
                f.write(json.dumps({"nodeid": f"{CHAPTERS[0]}::Cell {i}", "when": "call",
                                    "outcome": outcome, "duration": 1.0,
                                    "tolerated": i == 1, "message": "boom"}) + "\n")
            f.write('{"nodeid": "cut')  # the stop cut the last line
        return -2, True, timeout

    report = gc.run_all([stage], {}, reporter, budget=100, clock=lambda: 0.0, base_env={},
                        expected=CHAPTERS[:2], junit=tmp_path / "nbval-junit.xml",
                        runner=runner)
    (st,) = report["stages"]
    assert st["status"] == "timed out" and "recorded as they finished" in st["note"]
    a, b = report["chapters"]
    assert (a["result"], a["passed"], a["failed"], a["tolerated"]) == ("failed", 2, 1, 1)
    assert b["result"] == "not run"

    def interrupted(argv, *, env, timeout, log):  # Ctrl-C or SIGTERM in the middle
        runner(argv, env=env, timeout=timeout, log=log)
        raise KeyboardInterrupt

    report = {}
    with pytest.raises(KeyboardInterrupt):
        gc.run_all([stage], report, reporter, budget=100, clock=lambda: 0.0, base_env={},
                   expected=CHAPTERS[:2], junit=None, runner=interrupted)
    saved = json.loads(reporter.json_path.read_text())
    assert saved["stages"][0]["status"] == "interrupted"
    assert saved["chapters"][0]["passed"] == 2 and saved["chapters"][1]["result"] == "not run"


def test_a_stage_past_its_time_is_stopped_with_every_process_it_started(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                 start_new_session=True)  # as jupyter starts its kernels
        open({str(pidfile)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(120)
        """)
    lines: list[str] = []
    start = time.monotonic()
    code, timed_out, wall = gc.run_stage([sys.executable, "-c", script], env=dict(os.environ),
                                         timeout=8, log=lines.append, cwd=tmp_path)
    assert timed_out and code is not None and code != 0
    assert wall < 30 and time.monotonic() - start < 30
    assert "started\n" in "".join(lines) and "time is up" in "".join(lines)
    child = int(pidfile.read_text())
    deadline = time.time() + 10
    while time.time() < deadline and psutil.pid_exists(child):
        try:
            if psutil.Process(child).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    else:
        assert not psutil.pid_exists(child), "the stage's child outlived it"

    lines.clear()
    code, timed_out, _ = gc.run_stage(
        [sys.executable, "-c", "print('hello'); raise SystemExit(3)"], env=dict(os.environ),
        timeout=60, log=lines.append, cwd=tmp_path)
    assert (code, timed_out) == (3, False) and "hello\n" in "".join(lines)
    code, timed_out, _ = gc.run_stage([str(tmp_path / "no-such-program")], env={}, timeout=5,
                                      log=lines.append, cwd=tmp_path)
    assert code is None and not timed_out


# --------------------------------------------------------------------------- end to end

@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_without_cuda_it_exits_with_a_clear_message_and_writes_nothing(tmp_path):
    out = _run("--out-dir", str(tmp_path / "report"), "--stages", "nbval")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no CUDA device" in out.stderr and "--allow-cpu" in out.stderr
    assert not (tmp_path / "report").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_allow_cpu_runs_the_stages_on_the_cpu(tmp_path):
    """One small chapter under nbval on the CPU, through the whole tool."""
    chapter = "chapters/meterez-et-al-2024/07-isometry-gap-two-regimes.ipynb"
    out = _run("--allow-cpu", "--stages", "cuda-tests,nbval", "--chapters", chapter,
               "--budget", "280", "--out-dir", str(tmp_path / "report"))
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["mode"] == "cpu" and report["complete"]
    assert report["versions"]["numpy"] == md.version("numpy")
    assert report["imports"]["nbval"] == "ok" and report["imports"]["eit"] == "ok"
    (stage,) = [s for s in report["stages"] if s["name"] == "nbval"]
    (row,) = report["chapters"]
    assert row["chapter"] == chapter
    log = (tmp_path / "report" / "report.log").read_text()
    assert "stage nbval" in log and "--nbval" in log
    # a loaded machine may run out of the tiny budget; otherwise the chapter passes
    assert stage["status"] in ("passed", "timed out"), log[-3000:]
    if stage["status"] == "passed":
        assert out.returncode == 0, log[-3000:]
        assert row["result"] == "passed" and row["passed"] > 5 and row["failed"] == 0
    assert not (ROOT / "data" / "gpu" / "report.json").exists() or \
        json.loads((ROOT / "data" / "gpu" / "report.json").read_text())["mode"] == "cuda"


# --------------------------------------------------------------------------- the status page

def _eit_pages():
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        import eit_pages
    finally:
        sys.path.remove(str(ROOT / "_ext"))
    return eit_pages


SAMPLE = {
    "schema": 1, "mode": "cuda", "device": "NVIDIA H200", "started": "2026-11-27 18:00:00 UTC",
    "wall_s": 431.2, "budget_s": 450, "complete": True, "commit": "7947209abcdef0123",
    "python": "3.12.3", "cpu_count": 16,
    "torch": {"torch": "2.11.0+cu130", "cuda": "13.0", "cuda_available": True},
    "nvidia_smi": "NVIDIA H200, 580.159.04, 143771 MiB",
    "versions": {"torch": "2.11.0+cu130", "numpy": "2.5.2", "sympy": "1.14.0",
                 "jupyter-book": None},
    "stages": [
        {"name": "nbval", "command": "python3 -m pytest chapters --nbval", "status": "failed",
         "exit_code": 1, "wall_s": 108.0, "timeout_s": 225.0, "note": ""},
        {"name": "benchmark", "command": "python3 tools/benchmark.py --device cuda",
         "status": "timed out", "exit_code": -2, "wall_s": 67.0, "timeout_s": 67.0, "note": ""},
        {"name": "cuda-tests", "command": "", "status": "skipped", "exit_code": None,
         "wall_s": 0, "timeout_s": 45, "note": "no library test is named or marked for CUDA"}],
    "chapters": [
        {"chapter": "chapters/hanin-rolnick-2018/01-fm1-mean-length.ipynb", "result": "failed",
         "passed": 10, "failed": 8, "tolerated": 3, "time_s": 20.5,
         "failed_cells": [{"cell": f"Cell {i}", "message": "KeyError"} for i in range(11, 19)]},
        {"chapter": "chapters/performance/01-benchmarks.ipynb", "result": "passed",
         "passed": 12, "failed": 0, "tolerated": 0, "time_s": 4.0, "failed_cells": []},
        {"chapter": "chapters/new/09-not-in-toc.ipynb", "result": "not run", "passed": 0,
         "failed": 0, "tolerated": 0, "time_s": 0.0, "failed_cells": []}],
    "summary": {"chapters_passed": 1, "chapters_failed": 1, "chapters_not_run": 1,
                "cells_passed": 22, "cells_failed": 8, "cells_tolerated": 3},
}


def _html(out: list[nodes.Node], eit_pages) -> str:
    """The block as docutils writes it to HTML (custom link nodes replaced by their text)."""
    doc = new_document("status", get_default_settings(Parser))
    doc.extend(out)
    for node in list(doc.findall(eit_pages.eit_link)):
        node.replace_self(nodes.inline("", "", *node.children))
    return publish_from_doctree(doc, writer_name="html5").decode()


def test_the_status_page_says_when_there_is_no_gpu_report(tmp_path):
    eit_pages = _eit_pages()
    assert eit_pages.load_gpu_report(tmp_path) is None
    (tmp_path / "data" / "gpu").mkdir(parents=True)
    (tmp_path / "data" / "gpu" / "report.json").write_text("{not json")
    assert eit_pages.load_gpu_report(tmp_path) is None
    out = eit_pages.gpu_report_nodes(None)
    assert isinstance(out[0], nodes.rubric) and out[0]["ids"] == ["status-gpu"]
    text = " ".join(n.astext() for n in out)
    assert "No GPU report yet" in text and "data/gpu/report.json" in text
    assert "./book gpu-check" in text
    assert "No GPU report yet" in _html(out, eit_pages)


def test_the_status_page_shows_the_latest_gpu_report(tmp_path):
    eit_pages = _eit_pages()
    (tmp_path / "data" / "gpu").mkdir(parents=True)
    (tmp_path / "data" / "gpu" / "report.json").write_text(json.dumps(SAMPLE))
    report = eit_pages.load_gpu_report(tmp_path)
    titles = {"chapters/hanin-rolnick-2018/01-fm1-mean-length": "The mean length $M_d$"}
    found = {"chapters/hanin-rolnick-2018/01-fm1-mean-length",
             "chapters/performance/01-benchmarks"}
    out = eit_pages.gpu_report_nodes(report, titles=titles, found_docs=found,
                                     pins={"torch": "2.13.0", "numpy": "2.5.2"})
    text = " ".join(n.astext() for n in out)
    for words in ("NVIDIA H200", "torch 2.11.0+cu130 (CUDA 13.0)", "driver 580.159.04",
                  "2026-11-27 18:00:00 UTC", "431 s of a 450 s budget", "commit 7947209abc",
                  "1 of 3 chapters passed, 1 failed, 1 did not run", "22 cells passed",
                  "3 passed only thanks to the statistical tolerance",
                  "Not installed: jupyter-book",
                  "Differing from requirements.txt: torch 2.11.0+cu130 (pinned 2.13.0)"):
        assert words in text, words
    stages, chapters = [n for n in out if isinstance(n, nodes.table)]
    rows = [[e.astext() for e in r.findall(nodes.entry)] for r in stages.findall(nodes.row)]
    assert rows[0][:3] == ["Stage", "Result", "Exit code"]
    assert rows[2][:4] == ["benchmark", "timed out", "-2", "67"]
    assert rows[3][1] == "skipped (no library test is named or marked for CUDA)"
    assert rows[3][2] == "-"
    rows = [[" ".join(e.astext().split()) for e in r.findall(nodes.entry)]
            for r in chapters.findall(nodes.row)]
    assert rows[0] == ["Chapter", "Result", "Cells passed", "Failed",
                       "Passed thanks to the tolerance", "Time (s)", "Failed cells"]
    assert len(rows) == 1 + len(SAMPLE["chapters"])
    assert rows[1][:6] == ["The mean length M_d", "failed", "10", "8", "3", "20"]
    assert rows[1][6] == ("Cell 11, Cell 12, Cell 13, Cell 14, Cell 15, Cell 16, ... "
                          "(8 in all)")
    assert rows[2][0] == "chapters/performance/01-benchmarks.ipynb"  # no title: the path
    links = list(chapters.findall(eit_pages.eit_link))
    assert [lk["docname"] for lk in links] == sorted(found)  # the chapter outside the build
    assert list(chapters.findall(nodes.math))  # titles keep their math
    html = _html(out, eit_pages)
    assert html.count("<table") == 2 and "NVIDIA H200" in html

    cpu = eit_pages.gpu_report_nodes({**SAMPLE, "mode": "cpu", "complete": False,
                                      "chapters": [], "stages": []})
    text = " ".join(n.astext() for n in cpu)
    assert "on the CPU (a test of the tool), not on a GPU" in text and "incomplete" in text
    assert not [n for n in cpu if isinstance(n, nodes.table)]
