"""The book on a GPU: one command that checks everything a CUDA device can change, in a budget.

    python3 tools/gpu_check.py [--budget SECONDS] [--jobs N] [--install-wheels DIR]
                               [--stages a,b,..] [--chapters NB ..] [--out-dir DIR]
                               [--allow-cpu] [--dry-run]
    python3 tools/gpu_check.py --download-wheels DIR

(``./book gpu-check ...`` runs it; it does not create the venv: a GPU machine has Python, PyTorch
with CUDA and the scientific stack, and gets the rest offline from wheels.)

What it does, in this order:

1. ``--install-wheels DIR``: installs the wheels of ``tools/gpu-wheels.txt`` (the notebook test
   stack: nbval, nbclient, ipykernel, jupytext, haarpy, their dependencies, sympy) from ``DIR``
   with ``pip install --no-index --no-deps --target /tmp/site`` (``--site``), skipping a wheel
   whose version the machine already has, and puts that folder on ``sys.path`` and on the
   ``PYTHONPATH`` of every stage. ``--download-wheels DIR`` fetches those wheels (for CPython
   3.12 on x86-64 Linux) on a machine with an index, and does nothing else.
2. Records the device (name, memory, CUDA, driver) and the versions of the libraries, in a
   subprocess that cannot fail on a missing package, before anything long runs; exits with a
   clear message (status 2) when PyTorch sees no CUDA device, unless ``--allow-cpu`` is given:
   then the same stages run on the CPU with tiny budgets (a test of this tool; the report goes
   to ``_build/gpu-check-cpu/``, never into ``data/``).
3. Runs the stages, each with its own time budget within the total ``--budget`` (default 450 s;
   installing, recording and reporting included), each as a subprocess that is stopped at its
   deadline (SIGINT first, so that pytest still writes its results, then the whole process
   tree):

   * ``cuda-tests``: the library tests named or marked for CUDA (``test_*cuda*``,
     ``test_*gpu*``, ``@pytest.mark.cuda``); skipped when there are none;
   * ``nbval``: every chapter under nbval on the device, as ``./book test`` runs them (the
     environment of ``./book``, the statistical comparison of ``eit.verdicts.nbval_plugin``),
     with a JUnit XML file from which each chapter's cells passed, failed and passed thanks to
     the statistical tolerance are read;
   * ``benchmark``: ``tools/benchmark.py --device cuda --out data/benchmarks/cuda.json
     --max-seconds S``;
   * ``paper-scale``: ``tools/paper_scale.py --budget S`` with the time left.

   A stage that fails or runs out of time is recorded as such; the next one still runs.
4. Writes one report, after every stage (so that it exists whatever happens next):
   ``data/gpu/report.json`` (device, versions, start time, each stage's command, exit code and
   wall time, each chapter's result, summary counts) and ``data/gpu/report.log`` (the full
   output), and sets their lines of ``data/SHA256SUMS``. The status page of the book shows it.

The exit status is 0 when every stage passed, 1 otherwise, 2 when there is no CUDA device.
"""

from __future__ import annotations

import argparse
import ast
import codecs
import datetime as dt
import hashlib
import importlib
import importlib.metadata as md
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELS = ROOT / "tools" / "gpu-wheels.txt"
SCHEMA = 1
DEFAULT_BUDGET = 450.0
CPU_BUDGET = 90.0  # --allow-cpu without --budget: a test of the tool, not of the book
RESERVE = 10.0  # seconds kept for the last report
MANIFEST = "SHA256SUMS"
STAGES = ("cuda-tests", "nbval", "benchmark", "paper-scale")
#: Share of the total budget a stage may take at most (the last one takes what is left).
SHARES = {"cuda-tests": 0.1, "nbval": 0.5, "benchmark": 0.15, "paper-scale": 1.0}
#: Distributions whose versions the report records (a missing one is recorded as None).
PACKAGES = ("torch", "numpy", "scipy", "sympy", "mpmath", "matplotlib", "scikit-learn",
            "pytest", "pytest-xdist", "hypothesis", "psutil", "nbval", "nbclient", "nbformat",
            "ipykernel", "ipython", "jupyter_client", "jupyter_core", "jupytext", "haarpy",
            "pyzmq", "tornado", "traitlets", "matplotlib-inline", "jupyter-book")
#: Modules the stages import: each is tried before anything long runs.
IMPORTS = ("torch", "numpy", "scipy", "sympy", "matplotlib", "sklearn", "xdist", "nbval",
           "nbclient", "nbformat", "ipykernel", "jupyter_client", "jupytext", "haarpy",
           "matplotlib_inline", "eit")
PIP_PLATFORM = ("--python-version", "3.12", "--implementation", "cp",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64", "--platform", "any")


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# --------------------------------------------------------------------------- wheels

def wheel_pins(path: Path = WHEELS) -> list[str]:
    """The ``name==version`` lines of ``tools/gpu-wheels.txt``."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            if "==" not in line:
                raise ValueError(f"{path}: not pinned: {line!r}")
            out.append(line)
    return out


def download_command(folder: Path, python: str = sys.executable) -> list[str]:
    return [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *PIP_PLATFORM,
            "-d", str(folder), *wheel_pins()]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name_version(path: Path) -> tuple[str, str]:
    """('ipykernel', '7.4.0') from ``ipykernel-7.4.0-py3-none-any.whl``."""
    name, version = path.name.split("-")[:2]
    return canonical(name), version


def installed_version(name: str, exclude: Path | None = None) -> str | None:
    """The version of distribution ``name`` outside ``exclude`` (None if not installed)."""
    paths = [p for p in sys.path if not exclude or Path(p or ".").resolve() != exclude.resolve()]
    for dist in md.distributions(path=paths):
        if canonical(dist.metadata["Name"] or "") == canonical(name):
            return dist.version
    return None


def select_wheels(folder: Path, site: Path) -> tuple[list[Path], list[str]]:
    """The wheels of ``folder`` to install, and 'name version' of those skipped because the
    machine already has that exact version (sympy, for example)."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        raise FileNotFoundError(f"no wheels in {folder}: run --download-wheels {folder} on a "
                                "machine with a package index first")
    todo, skipped = [], []
    for wheel in wheels:
        name, version = wheel_name_version(wheel)
        have = installed_version(name, exclude=site)
        if have is not None and have.split("+")[0] == version:
            skipped.append(f"{name} {version}")
        else:
            todo.append(wheel)
    return todo, skipped


def install_command(wheels: list[Path], site: Path, python: str = sys.executable) -> list[str]:
    return [python, "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade",
            "--disable-pip-version-check", "--target", str(site), *map(str, wheels)]


# --------------------------------------------------------------------------- versions

def versions(packages=PACKAGES) -> dict[str, str | None]:
    """Version of each distribution, None where it is not installed (never raises)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = md.version(name)
        except Exception:  # noqa: BLE001 - missing or broken metadata: recorded as None
            out[name] = None
    return out


def try_imports(modules=IMPORTS) -> dict[str, str]:
    """'ok' or the error of importing each module."""
    out = {}
    for name in modules:
        try:
            importlib.import_module(name)
            out[name] = "ok"
        except BaseException as err:  # noqa: BLE001 - any failure is recorded, never raised
            out[name] = f"{type(err).__name__}: {err}"[:300]
    return out


def torch_info() -> dict:
    """PyTorch, CUDA and the device; ``error`` if torch cannot be imported."""
    try:
        import torch
    except BaseException as err:  # noqa: BLE001
        return {"error": f"{type(err).__name__}: {err}"[:300], "cuda_available": False}
    info = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cuda_available": bool(torch.cuda.is_available()), "devices": []}
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        info["cudnn"] = None
    if info["cuda_available"]:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["devices"].append({"name": p.name, "memory_mib": p.total_memory // 2**20,
                                    "capability": f"{p.major}.{p.minor}"})
    return info


def nvidia_smi() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def probe() -> dict:
    """Everything the report records about the machine (run in a subprocess by :func:`main`)."""
    return {"python": platform.python_version(), "executable": sys.executable,
            "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "versions": versions(), "imports": try_imports(), "torch": torch_info(),
            "nvidia_smi": nvidia_smi()}


def run_probe(env: dict, timeout: float = 180) -> dict:
    """:func:`probe` in a subprocess with the stages' environment (their PYTHONPATH)."""
    try:
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError) as err:
        return {"error": f"the probe failed: {type(err).__name__}: {err}"[:500],
                "versions": versions(), "torch": {"cuda_available": False}}


def device_name(info: dict) -> str:
    devices = info.get("torch", {}).get("devices") or []
    if devices:
        names = sorted({d["name"] for d in devices})
        return ", ".join(names) + (f" (x{len(devices)})" if len(devices) > 1 else "")
    return f"cpu ({info.get('cpu_count', '?')} cores)"


# --------------------------------------------------------------------------- environment

def book_environment(base: dict, device: str, pythonpath: list[str]) -> dict:
    """The environment ``./book`` sets for ``test`` (one thread, the inline backend, the
    default scale, the reference seed), the device (``EIT_DEVICE``; the device guard off), and
    ``pythonpath`` first on PYTHONPATH."""
    env = dict(base)
    threads = env.get("EIT_THREADS", "1")
    env.update({"EIT_BOOK_ROOT": str(ROOT), "PYTHONHASHSEED": "0",
                "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                "PYDEVD_DISABLE_FILE_VALIDATION": "1", "OMP_NUM_THREADS": threads,
                "MKL_NUM_THREADS": threads, "EIT_SCALE": "default", "EIT_DEVICE": device,
                # the real device, never the simulated one of ./book test's device guard
                "EIT_GUARD": "0", "PYTHONUNBUFFERED": "1"})
    if platform.machine() == "x86_64":
        env.setdefault("MKL_CBWR", "AVX2")
        env.setdefault("ATEN_CPU_CAPABILITY", "avx2")
    env.pop("EIT_SEED", None)
    old = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([*pythonpath, *old])
    return env


def eit_shim(folder: Path) -> Path:
    """A folder holding ``eit`` -> ``lib/`` (what pyproject's ``package-dir`` maps), to put on
    PYTHONPATH so that ``import eit`` is this checkout's library without installing it."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "eit"
    if not link.exists():
        link.symlink_to(ROOT / "lib", target_is_directory=True)
    plugin = folder / "eit_gpu_check.py"  # this file, as the pytest plugin of the nbval stage
    if not plugin.exists():
        plugin.symlink_to(Path(__file__).resolve())
    return folder


# --------------------------------------------------------------------------- the plan

@dataclass
class Stage:
    name: str
    title: str
    argv: list[str]
    share: float  # of the total budget, at most
    env: dict[str, str] = field(default_factory=dict)
    #: option of the tool that receives its own time limit (None: no such option)
    limit_option: str | None = None
    skip: str = ""  # why the stage does not run (nothing to run)

    def command(self, limit: float | None = None) -> list[str]:
        if self.limit_option is None:
            return list(self.argv)
        return [*self.argv, self.limit_option, "S" if limit is None else str(int(limit))]


CUDA_MARK = re.compile(r"mark\.(cuda|gpu)\b|cuda\.is_available")


def cuda_tests(root: Path = ROOT) -> list[str]:
    """Node ids of the library tests named (``test_cuda*``, ``test_gpu*``) or marked
    (``@pytest.mark.cuda``/``gpu``, a ``skipif`` on ``torch.cuda.is_available()``, also as the
    module's ``pytestmark``) for CUDA; this tool's own tests excepted."""
    ids = []
    for path in sorted((root / "tests").glob("test_*.py")):
        if path.name == "test_gpu_check.py":
            continue
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        rel = path.relative_to(root).as_posix()
        module_mark = any(isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
            and CUDA_MARK.search(ast.unparse(n.value)) for n in tree.body)

        def wanted(fn, module_mark=module_mark) -> bool:
            if module_mark or re.match(r"test_(cuda|gpu)", fn.name, re.I):
                return True
            return any(CUDA_MARK.search(ast.unparse(d)) for d in fn.decorator_list)

        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    node.name.startswith("test") and wanted(node):
                ids.append(f"{rel}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                ids.extend(f"{rel}::{node.name}::{f.name}" for f in node.body
                           if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                           and f.name.startswith("test") and wanted(f))
    return ids


def plan(*, mode: str, jobs: int, out_dir: Path, chapters: list[str] | None = None,
         stages: tuple[str, ...] = STAGES, python: str = sys.executable,
         build_dir: Path | None = None) -> list[Stage]:
    """The stages to run, in order. ``mode`` is ``cuda`` or ``cpu`` (``--allow-cpu``)."""
    build_dir = build_dir or default_build_dir(mode)
    if chapters:
        jobs = max(1, min(jobs, len(expected_chapters(chapters))))
    out: list[Stage] = []
    if "cuda-tests" in stages:
        ids = cuda_tests()
        out.append(Stage("cuda-tests", "library tests named or marked for CUDA",
                         [python, "-m", "pytest", *ids, "-p", "no:cacheprovider", "-q"],
                         SHARES["cuda-tests"],
                         skip="" if ids else "no library test is named or marked for CUDA"))
    if "nbval" in stages:
        out.append(Stage(
            "nbval", f"every chapter under nbval on {mode}",
            [python, "-m", "pytest", *(chapters or ["chapters"]), "--nbval",
             "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg",
             "-n", str(jobs), "--dist", "loadscope", "-p", "no:cacheprovider",
             "--junitxml", str(build_dir / "nbval-junit.xml"), "-p", "eit_gpu_check"],
            SHARES["nbval"], env={LIVE: str(build_dir / "nbval-live.jsonl")}))
    if "benchmark" in stages:
        bench_out = (Path("data/benchmarks/cuda.json") if mode == "cuda"
                     else out_dir / "benchmark-cpu.json")
        out.append(Stage("benchmark", f"the engines' benchmark on {mode}",
                         [python, "tools/benchmark.py", "--device", mode, "--out",
                          str(bench_out)], SHARES["benchmark"], limit_option="--max-seconds"))
    if "paper-scale" in stages:
        # on the CPU (a test of this tool) the paper-scale path runs at smoke sizes, whose
        # results go to _build/smoke-data, never into data/
        scale = "paper" if mode == "cuda" else "smoke"
        out.append(Stage("paper-scale", "paper-scale runs in the time left",
                         [python, "tools/paper_scale.py", "--scale", scale],
                         SHARES["paper-scale"], limit_option="--budget"))
    return out


def stage_timeout(stage: Stage, budget: float, left: float) -> float:
    """Seconds a stage may run: its share of the budget, within what is left."""
    return max(0.0, min(stage.share * budget, left - RESERVE))


def inner_limit(timeout: float) -> float:
    """The limit passed to a tool that stops itself: before its own deadline, with time to
    write its results."""
    return max(1.0, timeout * 0.85 - 5)


# --------------------------------------------------------------------------- running

@dataclass
class Result:
    name: str
    command: str
    status: str = "not run"  # passed, failed, timed out, skipped, not run, running
    exit_code: int | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    timeout_s: float = 0.0
    started: str = ""
    note: str = ""


def _tree(pid: int) -> list:
    try:
        import psutil
        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil missing or the process is gone
        return []


def stop_tree(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGINT to the stage's process group, as Ctrl-C would (pytest and its xdist workers still
    write their results), then SIGTERM and SIGKILL to it and every process it started (jupyter
    kernels run in sessions of their own)."""
    family = _tree(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=grace)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        pass
    family += _tree(proc.pid)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        alive = [p for p in family if _alive(p)]
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in alive:
            try:
                p.send_signal(sig)
            except Exception:  # noqa: BLE001 - already gone
                pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if not any(_alive(p) for p in family):
            break


def _alive(p) -> bool:
    try:
        import psutil
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except Exception:  # noqa: BLE001
        return False


def run_stage(argv: list[str], *, env: dict, timeout: float, log: Callable[[str], None],
              cwd: Path = ROOT, grace: float = 15.0) -> tuple[int | None, bool, float]:
    """Run ``argv``, streaming its output to ``log``, stopped after ``timeout`` seconds.

    Returns (exit code, timed out, wall seconds). The SIGINT is sent ``grace`` seconds before
    the deadline, so the stage ends by ``timeout``.
    """
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as err:
        log(f"could not start: {err}\n")
        return None, False, time.monotonic() - start

    def pump():  # as it comes, not line by line (pytest's progress dots end no line)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := proc.stdout.read1(1 << 16):
            log(decoder.decode(chunk))
        if rest := decoder.decode(b"", final=True):
            log(rest)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    grace = min(grace, 0.1 * timeout)
    soft = max(0.5, timeout - grace - min(10.0, 0.05 * timeout))
    timed_out = False
    try:
        proc.wait(timeout=soft)
    except subprocess.TimeoutExpired:
        timed_out = True
        log(f"\n[gpu-check] time is up ({timeout:.0f} s): stopping the stage\n")
        stop_tree(proc, grace=max(1.0, grace))
    except KeyboardInterrupt:
        stop_tree(proc, grace=5)
        raise
    reader.join(timeout=10)
    return proc.returncode, timed_out, time.monotonic() - start


# --------------------------------------------------------------------------- junit

def chapter_of(classname: str, known: list[str]) -> str:
    """``chapters/part/01-x.ipynb`` from JUnit's ``chapters.part.01-x.ipynb``."""
    for path in known:
        if path.replace("/", ".") == classname:
            return path
    parts = classname.split(".")
    if len(parts) >= 4 and parts[-1] == "ipynb":
        return "/".join(parts[:-2]) + "/" + ".".join(parts[-2:])
    return classname


def aggregate(cells: list[dict]) -> dict[str, dict]:
    """Per chapter: cells passed, failed, skipped, passed thanks to the statistical tolerance,
    time (s), and the failed cells with the first line of their message, from one record per
    cell (``chapter``, ``cell``, ``outcome``, ``time``, ``tolerated``, ``message``)."""
    out: dict[str, dict] = {}
    for c in cells:
        row = out.setdefault(c["chapter"], {"passed": 0, "failed": 0, "skipped": 0,
                                            "tolerated": 0, "time_s": 0.0, "failed_cells": [],
                                            "tolerated_cells": []})
        row["time_s"] = round(row["time_s"] + float(c.get("time") or 0), 3)
        row[c["outcome"]] += 1
        if c["outcome"] == "failed":
            row["failed_cells"].append({"cell": c["cell"], "message": c.get("message", "")})
        if c.get("tolerated"):
            row["tolerated"] += 1
            row["tolerated_cells"].append(c["cell"])
    return out


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def parse_junit(path: Path, chapters: list[str]) -> dict[str, dict]:
    """:func:`aggregate` of pytest's JUnit XML (failures and errors count as failed; a cell
    passed thanks to the tolerance carries the ``eit_tolerated`` property that
    ``eit.verdicts.nbval_plugin`` sets)."""
    cells = []
    for case in ET.parse(path).getroot().iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        outcome = ("failed" if bad is not None else
                   "skipped" if case.find("skipped") is not None else "passed")
        cells.append({
            "chapter": chapter_of(case.get("classname", ""), chapters),
            "cell": case.get("name", ""), "outcome": outcome,
            "time": float(case.get("time", 0) or 0),
            "tolerated": any(p.get("name") == "eit_tolerated" for p in case.iter("property")),
            "message": _first_line(bad.get("message") or bad.text) if bad is not None else ""})
    return aggregate(cells)


def parse_live(path: Path) -> dict[str, dict]:
    """:func:`aggregate` of the live record that ``-p eit_gpu_check`` writes (one JSON line per
    finished test phase), for a stage stopped before pytest wrote its JUnit XML."""
    tests: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line cut by the stop
        chapter, _, cell = r["nodeid"].partition("::")
        t = tests.setdefault(r["nodeid"], {"chapter": chapter, "cell": cell, "outcome": None,
                                           "time": 0.0, "tolerated": False, "message": ""})
        t["time"] += float(r.get("duration") or 0)
        t["tolerated"] = t["tolerated"] or bool(r.get("tolerated"))
        if r["outcome"] == "failed":
            t["outcome"], t["message"] = "failed", t["message"] or r.get("message", "")
        elif r["outcome"] == "skipped" and t["outcome"] != "failed":
            t["outcome"] = "skipped"
        elif r["when"] == "call" and t["outcome"] is None:
            t["outcome"] = "passed"
    return aggregate([t for t in tests.values() if t["outcome"]])


# pytest plugin: ``-p eit_gpu_check`` (this file, linked into the stages' PYTHONPATH by
# :func:`eit_shim`). pytest writes its JUnit XML only at the very end; this records every
# finished test phase at once, one JSON line in the file named by EIT_GPU_CHECK_LIVE, so that
# the results of a stage stopped at its deadline are not lost.
LIVE = "EIT_GPU_CHECK_LIVE"
_WORKER = [False]


def pytest_configure(config):
    # an xdist worker has ``workerinput`` (its environment may be inherited from an outer
    # pytest, so PYTEST_XDIST_WORKER would misjudge a controller started inside a worker)
    _WORKER[0] = hasattr(config, "workerinput")


def pytest_runtest_logreport(report):
    path = os.environ.get(LIVE)
    if not path or _WORKER[0]:  # the controller sees every report
        return
    if not (report.when == "call" or report.failed or report.skipped):
        return
    record = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
              "duration": report.duration,
              "tolerated": any(k == "eit_tolerated" for k, _ in report.user_properties),
              "message": _first_line(str(report.longrepr)) if report.failed else ""}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def chapter_rows(expected: list[str], parsed: dict[str, dict] | None) -> list[dict]:
    """One row per expected chapter (``not run`` where JUnit has none), then any other."""
    parsed = dict(parsed or {})
    rows = []
    for chapter in [*expected, *sorted(set(parsed) - set(expected))]:
        row = parsed.get(chapter)
        if row is None:
            rows.append({"chapter": chapter, "result": "not run", "passed": 0, "failed": 0,
                         "skipped": 0, "tolerated": 0, "time_s": 0.0, "failed_cells": [],
                         "tolerated_cells": []})
            continue
        result = "failed" if row["failed"] else "passed" if row["passed"] else "not run"
        rows.append({"chapter": chapter, "result": result, **row})
    return rows


def summary(report: dict) -> dict:
    chapters = report.get("chapters", [])
    stages = report.get("stages", [])
    count = lambda rows, key, value: sum(1 for r in rows if r.get(key) == value)  # noqa: E731
    return {
        "chapters": len(chapters),
        "chapters_passed": count(chapters, "result", "passed"),
        "chapters_failed": count(chapters, "result", "failed"),
        "chapters_not_run": count(chapters, "result", "not run"),
        "cells_passed": sum(r["passed"] for r in chapters),
        "cells_failed": sum(r["failed"] for r in chapters),
        "cells_tolerated": sum(r["tolerated"] for r in chapters),
        "stages_passed": count(stages, "status", "passed"),
        "stages_failed": count(stages, "status", "failed"),
        "stages_timed_out": count(stages, "status", "timed out"),
        "stages_skipped": count(stages, "status", "skipped"),
    }


# --------------------------------------------------------------------------- the report

def update_manifest_lines(paths: list[Path], data: Path) -> Path:
    """Set the lines of ``paths`` in ``data/SHA256SUMS`` (``sha256  relative/path``, sorted),
    leaving every other line as it is (the format of :func:`eit.core.store.update_manifest`)."""
    manifest = data / MANIFEST
    lines = {}
    for line in manifest.read_text().splitlines() if manifest.exists() else []:
        digest, sep, rel = line.partition("  ")
        if sep:
            lines[rel] = digest
    for path in paths:
        lines[path.resolve().relative_to(data.resolve()).as_posix()] = \
            hashlib.sha256(path.read_bytes()).hexdigest()
    text = "".join(f"{lines[rel]}  {rel}\n" for rel in sorted(lines))
    tmp = manifest.with_name(manifest.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, manifest)
    return manifest


class Reporter:
    """``report.json`` and ``report.log`` in ``out_dir``, written after every step; their
    manifest lines are set when ``out_dir`` is inside ``data``."""

    def __init__(self, out_dir: Path, data: Path | None = None, echo: bool = True):
        self.out_dir = out_dir
        self.data = data
        self.echo = echo
        out_dir.mkdir(parents=True, exist_ok=True)
        self.json_path = out_dir / "report.json"
        self.log_path = out_dir / "report.log"
        self._log = self.log_path.open("w", encoding="utf-8")
        self._lock = threading.Lock()

    def log(self, text: str) -> None:
        with self._lock:
            if self._log.closed:
                return
            self._log.write(text)
            self._log.flush()
            if self.echo:
                sys.stdout.write(text)
                sys.stdout.flush()

    def write(self, report: dict) -> None:
        report["summary"] = summary(report)
        tmp = self.json_path.with_name("report.json.tmp")
        tmp.write_text(json.dumps(report, indent=1) + "\n")
        os.replace(tmp, self.json_path)
        with self._lock:
            if not self._log.closed:
                self._log.flush()
        if self.data is not None and self.out_dir.resolve().is_relative_to(self.data.resolve()):
            update_manifest_lines([self.json_path, self.log_path], self.data)

    def close(self) -> None:
        with self._lock:
            self._log.close()


def nbval_results(junit: Path | None, live: Path | None,
                  expected: list[str]) -> tuple[list[dict], str]:
    """The chapter rows of the nbval stage, from its JUnit XML, else from the live record
    (the stage was stopped first); and a note on where they come from, if not from JUnit."""
    parsed, note = None, ""
    if junit is not None and junit.exists():
        try:
            parsed = parse_junit(junit, expected)
        except ET.ParseError as err:
            note = f"unreadable JUnit XML ({err})"
    else:
        note = "no JUnit XML was written"
    if parsed is None and live is not None and live.exists():
        parsed = parse_live(live)
        note += "; the cells are those recorded as they finished"
    return chapter_rows(expected, parsed), note


def run_all(stages: list[Stage], report: dict, reporter: Reporter, *, budget: float,
            clock: Callable[[], float], base_env: dict, expected: list[str],
            junit: Path | None = None,
            runner: Callable[..., tuple[int | None, bool, float]] = run_stage) -> dict:
    """Run the stages in order within ``budget`` (``clock()`` is the seconds spent so far),
    writing the report before and after each one. Interrupted (KeyboardInterrupt, SIGTERM),
    it records the running stage as ``interrupted``, writes the report and re-raises."""
    report["stages"] = [asdict(Result(s.name, shlex.join(s.command()))) for s in stages]
    if any(s.name == "nbval" for s in stages):
        report["chapters"] = chapter_rows(expected, None)
    reporter.write(report)
    for i, stage in enumerate(stages):
        res = Result(stage.name, shlex.join(stage.command()))
        timeout = stage_timeout(stage, budget, budget - clock())
        res.timeout_s = round(timeout, 1)
        if stage.skip:
            res.status, res.note = "skipped", stage.skip
        elif timeout < 5:
            res.status, res.note = "not run", "no time left in the budget"
        else:
            argv = stage.command(inner_limit(timeout))
            res.command, res.started, res.status = shlex.join(argv), now(), "running"
            report["stages"][i] = asdict(res)
            reporter.write(report)
            reporter.log(f"\n[gpu-check] {now()} stage {stage.name}: {stage.title} "
                         f"(at most {timeout:.0f} s)\n$ {res.command}\n")
            nbval = stage.name == "nbval"
            live = Path(stage.env[LIVE]) if LIVE in stage.env else None
            for old in (junit if nbval else None, live):
                if old is not None and old.exists():
                    old.unlink()
            start = clock()
            try:
                code, timed_out, wall = runner(argv, env={**base_env, **stage.env},
                                               timeout=timeout, log=reporter.log)
            except KeyboardInterrupt:
                res.status, res.wall_s = "interrupted", round(clock() - start, 1)
                if nbval:
                    report["chapters"], res.note = nbval_results(junit, live, expected)
                report["stages"][i] = asdict(res)
                reporter.write(report)
                raise
            res.exit_code, res.timed_out, res.wall_s = code, timed_out, round(wall, 1)
            res.status = ("timed out" if timed_out else "passed" if code == 0 else "failed")
            if code is None and not timed_out:
                res.note = "could not start"
            reporter.log(f"[gpu-check] stage {stage.name}: {res.status} (exit code {code}, "
                         f"{wall:.1f} s)\n")
            if nbval:
                report["chapters"], res.note = nbval_results(junit, live, expected)
        report["stages"][i] = asdict(res)
        reporter.write(report)
    return report


# --------------------------------------------------------------------------- main

def root_relative(path: str) -> str:
    """``path`` (from the working directory, or from the book's root) relative to the root."""
    p = Path(path)
    p = p.resolve() if p.exists() else (ROOT / p).resolve()
    try:
        return p.relative_to(ROOT).as_posix()
    except ValueError:
        raise SystemExit(f"gpu-check: {path} is not inside the book ({ROOT})") from None


def expected_chapters(chapters: list[str] | None) -> list[str]:
    """The chapter notebooks nbval runs: ``chapters`` (root-relative files or folders) or
    every chapter."""
    if chapters:
        out = []
        for c in chapters:
            p = ROOT / c
            out.extend(sorted(x.relative_to(ROOT).as_posix() for x in p.rglob("*.ipynb"))
                       if p.is_dir() else [c])
        return out
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").glob("*/*.ipynb"))


def commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def print_plan(stages: list[Stage], *, mode: str, budget: float, env_extra: dict,
               install: list[str] | None, out_dir: Path) -> None:
    print(f"gpu-check plan ({mode}; total budget {budget:.0f} s; report in {out_dir}):")
    if install:
        print(f"  install wheels: {shlex.join(install)}")
    print("  record versions and the device: "
          f"{shlex.join([sys.executable, 'tools/gpu_check.py', '--probe'])}")
    print("  environment: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in
                                       sorted(env_extra.items())))
    spent = 0.0
    for stage in stages:
        timeout = stage_timeout(stage, budget, budget - spent)
        if stage.skip:
            print(f"  {stage.name}: skipped ({stage.skip})")
            continue
        extra = " ".join(f"{k}={v}" for k, v in stage.env.items())
        print(f"  {stage.name} (at most {timeout:.0f} s): {extra + ' ' if extra else ''}"
              f"{shlex.join(stage.command(inner_limit(timeout)))}")
        spent += timeout


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=None,
                   help=f"total seconds (default {DEFAULT_BUDGET:.0f}; {CPU_BUDGET:.0f} on the "
                        "CPU)")
    p.add_argument("--jobs", "-n", type=int, default=min(os.cpu_count() or 1, 16),
                   help="nbval workers (default: the cores, at most 16)")
    p.add_argument("--stages", default=",".join(STAGES),
                   help=f"comma-separated, in this order: {','.join(STAGES)}")
    p.add_argument("--chapters", nargs="+", default=None,
                   help="chapter notebooks (or folders) for nbval (default: every chapter)")
    p.add_argument("--out-dir", type=Path, default=None,
                   help="where the report goes (default data/gpu; _build/gpu-check-cpu on the "
                        "CPU)")
    p.add_argument("--allow-cpu", action="store_true",
                   help="without a CUDA device, run the same stages on the CPU (tiny budgets)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--install-wheels", type=Path, metavar="DIR",
                   help="install the wheels of DIR into --site first (offline)")
    p.add_argument("--site", type=Path, default=None,
                   help="target of --install-wheels, put on PYTHONPATH (default /tmp/site)")
    p.add_argument("--download-wheels", type=Path, metavar="DIR",
                   help="download the wheels of tools/gpu-wheels.txt into DIR, then stop")
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    unknown = set(args.stages) - set(STAGES)
    if unknown:
        p.error(f"--stages: unknown {sorted(unknown)}; choose from {','.join(STAGES)}")
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    if args.chapters:
        args.chapters = [root_relative(c) for c in args.chapters]
    if args.budget is not None and args.budget <= RESERVE:
        p.error(f"--budget must be more than {RESERVE:.0f} s")
    return args


def download(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    cmd = download_command(folder)
    print("$ " + shlex.join(cmd), flush=True)
    code = subprocess.run(cmd).returncode
    wheels = sorted(folder.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"{len(wheels)} wheels in {folder}, {size / 2**20:.1f} MiB")
    return code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.probe:
        print(json.dumps(probe()))
        return 0
    if args.download_wheels:
        return download(args.download_wheels)
    started_clock = time.monotonic()
    clock = lambda: time.monotonic() - started_clock  # noqa: E731

    def terminated(signum, frame):  # stopped from outside: stop the stage, write the report
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)

    site = args.site or (Path("/tmp/site") if args.install_wheels else None)
    install = None
    if args.install_wheels:
        try:
            todo, skipped = select_wheels(args.install_wheels, site)
        except FileNotFoundError as err:
            print(f"gpu-check: {err}", file=sys.stderr)
            return 2
        install = install_command(todo, site) if todo else None
    work = Path(tempfile.mkdtemp(prefix="eit-gpu-check-"))
    try:
        shim = eit_shim(work / "path")
        pythonpath = [str(shim)] + ([str(site)] if site else [])
        mode = "cpu" if args.allow_cpu and args.dry_run else "cuda"
        if args.dry_run:
            budget = args.budget or (CPU_BUDGET if mode == "cpu" else DEFAULT_BUDGET)
            out_dir = args.out_dir or default_out_dir(mode)
            env = book_environment({}, mode, pythonpath)
            stages = plan(mode=mode, jobs=args.jobs, out_dir=out_dir, chapters=args.chapters,
                          stages=args.stages)
            print_plan(stages, mode=mode, budget=budget, env_extra=env, install=install,
                       out_dir=out_dir)
            if args.install_wheels and skipped:
                print(f"  (wheels already installed here, skipped: {', '.join(skipped)})")
            return 0
        install_log = ""
        if install:
            print("$ " + shlex.join(install[:9]) + f" ... ({len(todo)} wheels)", flush=True)
            out = subprocess.run(install, capture_output=True, text=True)
            install_log = out.stdout + out.stderr
            if out.returncode:
                print(install_log, file=sys.stderr)
                print(f"gpu-check: installing the wheels failed (exit {out.returncode})",
                      file=sys.stderr)
                return 1
        if site:
            sys.path.insert(0, str(site))
        print("recording the device and the versions ...", flush=True)
        info = run_probe(book_environment(dict(os.environ), "cpu", pythonpath))
        cuda = info.get("torch", {}).get("cuda_available", False)
        if not cuda and not args.allow_cpu:
            t = info.get("torch", {})
            why = t.get("error") or (f"torch {t.get('torch')} (CUDA {t.get('cuda')}) sees no "
                                     "CUDA device")
            print(f"gpu-check: no CUDA device: {why}.\nThis check is meant for a machine with "
                  "a CUDA GPU; nothing was run and no report was written. --allow-cpu runs "
                  "the same stages on the CPU with tiny budgets (a test of this tool).",
                  file=sys.stderr)
            return 2
        mode = "cuda" if cuda else "cpu"
        budget = args.budget or (DEFAULT_BUDGET if mode == "cuda" else CPU_BUDGET)
        out_dir = args.out_dir or default_out_dir(mode)
        reporter = Reporter(out_dir, data=ROOT / "data")
        env = book_environment(dict(os.environ), mode, pythonpath)
        build_dir = default_build_dir(mode)
        build_dir.mkdir(parents=True, exist_ok=True)
        stages = plan(mode=mode, jobs=args.jobs, out_dir=out_dir, chapters=args.chapters,
                      stages=args.stages, build_dir=build_dir)
        report = {
            "schema": SCHEMA, "tool": "tools/gpu_check.py",
            "command": shlex.join(["python3", "tools/gpu_check.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
            "started": now(), "finished": None, "complete": False, "mode": mode,
            "device": device_name(info), "budget_s": budget, "jobs": args.jobs,
            "commit": commit(), "python": info.get("python"), "platform": info.get("platform"),
            "cpu_count": info.get("cpu_count"), "torch": info.get("torch", {}),
            "nvidia_smi": info.get("nvidia_smi"), "versions": info.get("versions", {}),
            "imports": info.get("imports", {}),
            "wheels": {"dir": str(args.install_wheels) if args.install_wheels else None,
                       "site": str(site) if site else None,
                       "installed": [wheel_name_version(w)[0] + " " + wheel_name_version(w)[1]
                                     for w in todo] if install else [],
                       "skipped": skipped if args.install_wheels else []},
            "environment": {k: env[k] for k in sorted(env) if k.startswith(("EIT_", "OMP_",
                            "MKL_", "ATEN_", "PYTHON", "MPLBACKEND"))},
        }
        if "error" in info:
            report["probe_error"] = info["error"]
        reporter.log(f"[gpu-check] {report['started']} {report['command']}\n"
                     f"[gpu-check] device: {report['device']}; mode {mode}; budget {budget:.0f} s"
                     f"\n[gpu-check] versions: {json.dumps(report['versions'])}\n"
                     f"[gpu-check] torch: {json.dumps(report['torch'])}\n")
        if install_log:
            reporter.log(install_log)
        broken = {k: v for k, v in report["imports"].items() if v != "ok"}
        if broken:
            reporter.log("[gpu-check] WARNING: cannot import " + "; ".join(
                f"{k} ({v})" for k, v in broken.items()) + "\n")
        try:
            run_all(stages, report, reporter, budget=budget, clock=clock, base_env=env,
                    expected=expected_chapters(args.chapters),
                    junit=build_dir / "nbval-junit.xml")
        except KeyboardInterrupt:
            report["interrupted"] = True
        report["finished"], report["complete"] = now(), not report.get("interrupted", False)
        report["wall_s"] = round(clock(), 1)
        reporter.write(report)
        s = report["summary"]
        reporter.log(
            f"\n[gpu-check] {report['finished']}: {report['wall_s']:.0f} s; stages "
            f"{s['stages_passed']} passed, {s['stages_failed']} failed, "
            f"{s['stages_timed_out']} timed out, {s['stages_skipped']} skipped; chapters "
            f"{s['chapters_passed']} passed, {s['chapters_failed']} failed, "
            f"{s['chapters_not_run']} not run; cells {s['cells_passed']} passed, "
            f"{s['cells_failed']} failed, {s['cells_tolerated']} passed thanks to the "
            f"tolerance\n[gpu-check] report: {reporter.json_path}, {reporter.log_path}\n")
        reporter.close()
        reporter.write(report)  # the log is complete: its checksum is final
        if report.get("interrupted"):
            return 130
        ran = [x for x in report["stages"] if x["status"] != "skipped"]
        return 0 if ran and all(x["status"] == "passed" for x in ran) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def default_out_dir(mode: str) -> Path:
    return ROOT / "data" / "gpu" if mode == "cuda" else ROOT / "_build" / "gpu-check-cpu"


def default_build_dir(mode: str) -> Path:
    """Where the JUnit XML goes (git-ignored)."""
    return ROOT / "_build" / ("gpu-check" if mode == "cuda" else "gpu-check-cpu")


if __name__ == "__main__":
    sys.exit(main())
