"""One build of the book per test session, shared by every test that reads the built HTML.

The build (``jupyter-book build`` with warnings as errors, nitpicky) goes to
``_build/test-book/_build/html``. Under pytest-xdist the workers of one session share it: the
first to ask builds while the others wait on a file lock, and a stamp with the session's id
(``PYTEST_XDIST_TESTRUNUID``) tells them it is theirs. ``EIT_TEST_REUSE_BUILD=1`` reuses the
last build whatever session made it (for iterating on the checks).

Test modules import the fixture: ``from bookbuild import book  # noqa: F401``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "test-book"
LOCK = ROOT / "_build" / "test-book.lock"
_session = f"pid-{os.getpid()}"


@dataclass(frozen=True)
class Build:
    """A finished build: its exit status, its log and the HTML folder."""

    returncode: int
    log: str
    html: Path

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _run() -> Build:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    exe = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    out = subprocess.run(
        [exe, "build", str(ROOT), "--path-output", str(OUT), "--warningiserror", "--nitpick",
         "--keep-going"],
        capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return Build(out.returncode, out.stdout + out.stderr, OUT / "_build" / "html")


def build_book() -> Build:
    """The session's build of the book (built on first use, see the module docstring)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", _session)
    reuse = os.environ.get("EIT_TEST_REUSE_BUILD") == "1"
    stamp = OUT / "build.json"
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if stamp.exists():
                done = json.loads(stamp.read_text())
                if done["run"] == run or reuse:
                    return Build(done["returncode"], done["log"], Path(done["html"]))
            build = _run()
            stamp.write_text(json.dumps({"run": run, "returncode": build.returncode,
                                         "log": build.log, "html": str(build.html)}))
            return build
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def book() -> Build:
    """The built book (``test_book.py::test_book_builds_without_warnings`` checks its log)."""
    return build_book()


def html_of(build: Build) -> Path:
    """The HTML folder; skips the test when the build wrote none (the build test says why)."""
    if not (build.html / "index.html").exists():
        pytest.skip("the book did not build (see test_book_builds_without_warnings)")
    return build.html
