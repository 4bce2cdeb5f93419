"""Book-level checks: md/ipynb pairing, toc completeness, verdicts, and the strict build."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jupytext
import pytest
import yaml
from bookbuild import book  # noqa: F401 (the session's build, a fixture)

from eit.verdicts import ledger
from eit.verdicts.records import MIME_VERDICT as MIME
from eit.verdicts.records import OUTCOMES, SCOPES

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for p in (ROOT / "chapters").rglob("*.md")
                 if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


def toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = {toc["root"]}

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                found.add(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return found


def inputs(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_there_are_chapters():
    assert SOURCES, "no chapter sources found"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_md_and_ipynb_have_identical_inputs(source):
    nb_path = source.with_suffix(".ipynb")
    assert nb_path.exists(), f"{nb_path.name} is missing: run ./book execute {source}"
    assert inputs(jupytext.read(source)) == inputs(jupytext.read(nb_path)), (
        f"{source.name} and {nb_path.name} differ: run ./book execute {source}")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_no_cell_relies_on_a_trailing_semicolon(source):
    """nbval does not honour IPython's trailing ';' (the output would differ): use `_ = ...`."""
    for cell in jupytext.read(source).cells:
        lines = cell.source.rstrip().splitlines()
        if cell.cell_type == "code" and lines:
            assert not lines[-1].rstrip().endswith(";"), f"{source.name}: {lines[-1]}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_chapter_is_executed_and_records_verdicts(source):
    nb = json.loads(source.with_suffix(".ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert all(c.get("execution_count") for c in code), "not fully executed"
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    assert not [o for c in code for o in c["outputs"]
                if o["output_type"] == "stream" and o["name"] == "stderr"], "stderr output"
    assert any(MIME in o.get("metadata", {}) for c in code for o in c["outputs"]), "no verdict"
    assert "eit" in nb["metadata"], "no execution metadata: run ./book execute"
    if "subplots(" in source.read_text():
        assert any("image/png" in o.get("data", {}) for c in code for o in c["outputs"]), (
            "the chapter draws figures but its notebook holds none (non-inline backend?)")


def test_every_chapter_and_page_is_in_the_toc():
    listed = toc_files()
    for source in SOURCES:
        assert source.relative_to(ROOT).with_suffix("").as_posix() in listed, source
    for overview in (ROOT / "chapters").glob("*/overview.md"):
        assert overview.relative_to(ROOT).with_suffix("").as_posix() in listed, overview
    for entry in listed:
        assert any((ROOT / f"{entry}{ext}").exists() for ext in (".md", ".ipynb")), entry


def test_ledger_is_built_from_the_notebooks():
    records = ledger.verdicts()
    assert records and all(r["outcome"] in OUTCOMES and r["scope"] in SCOPES for r in records)
    assert all(re.fullmatch(r"v-[0-9a-f]{10}", r["id"]) for r in records)
    chapters = {r["chapter"] for r in records}
    assert chapters == {s.relative_to(ROOT).with_suffix("").as_posix() for s in SOURCES}


def test_ledger_refuses_a_record_of_the_retired_schema():
    rec = dict(ledger.verdicts()[0])
    with pytest.raises(ValueError, match="schema 2"):
        ledger.normalize({k: v for k, v in rec.items() if k != "schema"})
    with pytest.raises(ValueError, match="without"):
        ledger.normalize({k: v for k, v in rec.items() if k != "outcome"})
    with pytest.raises(ValueError, match="outcome must be"):
        ledger.normalize({**rec, "outcome": "plausible"})


def _lock_entries(path: Path) -> list[tuple[str, list[str]]]:
    """(requirement line, its hashes) for each entry of a pip requirements lock."""
    entries: list[tuple[str, list[str]]] = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("    --hash=sha256:"):
            assert entries, f"{path.name}: a hash before any requirement"
            entries[-1][1].append(line.split("sha256:")[1].rstrip(" \\"))
        else:
            entries.append((line.rstrip(" \\"), []))
    return entries


@pytest.mark.parametrize("lock", ["requirements.txt", "requirements-cuda.txt",
                                  "requirements-lab.txt"])
def test_every_requirement_is_pinned_with_its_hashes(lock):
    """Issue 25 item 9: requirements.txt carried no hashes and left dependencies unpinned."""
    entries = _lock_entries(ROOT / lock)
    assert len(entries) > 100                      # the dependencies too, not only the top
    for req, hashes in entries:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*==[^\s;]+( ; .+)?$", req), req
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), req


def test_the_locks_hold_requirements_in_and_the_right_pytorch():
    sys.path.insert(0, str(ROOT / "tools"))
    from lock import pins

    wanted = pins(ROOT / "requirements.in")
    cpu, cuda = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-cuda.txt")
    for name, versions in wanted.items():
        assert versions <= cpu.get(name, set()), name
        if name != "torch":
            assert versions <= cuda.get(name, set()), name
    # the CPU lock: PyTorch's CPU build on Linux, no CUDA libraries; the CUDA lock: PyPI's
    assert cpu["torch"] == {"2.13.0", "2.13.0+cpu"} and cuda["torch"] == {"2.13.0"}
    assert not any(n.startswith(("nvidia-", "cuda-", "triton")) for n in cpu)
    assert any(n.startswith("nvidia-") for n in cuda)
    # the theme is pinned: the look of the book does not change with the install day
    assert {"jupyter-book", "sphinx-book-theme", "pydata-sphinx-theme"} <= set(wanted)


def test_setup_installs_only_hash_checked_pins():
    """``./book setup``: pip itself, the lock and eit's build backend, all hash-checked."""
    script = (ROOT / "book").read_text()
    setup = script[script.index("setup() {"):script.index("build() {")]
    installs = [line.strip() for line in setup.splitlines() if "pip install" in line]
    assert installs and all("--require-hashes" in line or "--no-build-isolation" in line
                            for line in installs), installs
    assert re.search(r'PIP_LOCK="pip==[0-9.]+ --hash=sha256:[0-9a-f]{64}', script)
    assert "EIT_TORCH" in setup and "requirements-cuda.txt" in setup
    lab = script[script.index("  lab)"):]
    lab = lab[:lab.index(";;")]
    assert "--require-hashes" in lab and "-r requirements-lab.txt" in lab
    # Binder reads binder/ (tests/test_anywhere.py): no root postBuild that it would ignore
    assert not (ROOT / "postBuild").exists()


def test_conda_environment_installs_the_cpu_lock():
    """environment.yml (conda; Binder uses binder/) installs requirements.txt, with PyTorch's
    CPU index."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip == ["--extra-index-url https://download.pytorch.org/whl/cpu",
                   "-r requirements.txt"]


def test_book_builds_without_warnings(book):  # noqa: F811 (the fixture)
    """jupyter-book build with warnings as errors, nitpicky (the session's shared build)."""
    log = book.log
    assert book.returncode == 0, log[-6000:]
    assert "WARNING" not in log, log[-6000:]
    html = book.html
    assert (html / "ledger.html").exists()
    page = (html / "chapters" / "arpit-bengio-2019" / "01-one-layer-norm-preservation.html")
    assert "eit-verdict" in page.read_text()
    # no directive left unparsed (e.g. a theorem block broken by a role in its title)
    for path in (html / "chapters").rglob("*.html"):
        text = path.read_text()
        assert "```{" not in text and "{prf:" not in text, f"unrendered directive in {path}"


def test_ci_installs_nothing_unpinned():
    """Issue 25 item 9: CI ran an unpinned ``apt-get install chromium`` (Debian replaces it)."""
    ci = (ROOT / ".ci" / "run").read_text()
    code = "\n".join(line for line in ci.splitlines() if not line.lstrip().startswith("#"))
    assert "apt-get" not in code and "pip install" not in code and "npm install" not in code
    script = (ROOT / "tools" / "chromium.sh").read_text()
    assert re.search(r"^VERSION=\d+\.\d+\.\d+$", script, re.M)
    assert re.search(r"^INTEGRITY=sha512-[A-Za-z0-9+/]{86}==$", script, re.M)
    assert 'if [ "$got" != "$INTEGRITY" ]' in script
    book_script = (ROOT / "book").read_text()
    assert "tools/chromium.sh" in book_script[book_script.index("  test)"):]


def test_the_pinned_chromium_refuses_a_tampered_package(tmp_path):
    """tools/chromium.sh unpacks nothing from a package whose sha512 is not the pinned one."""
    import os
    import subprocess

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "npm").write_text("#!/bin/sh\necho tampered > sparticuz-chromium-153.0.0.tgz\n")
    (fake / "npm").chmod(0o755)
    dest = tmp_path / "chromium"
    run = subprocess.run([str(ROOT / "tools" / "chromium.sh"), str(dest)], capture_output=True,
                         text=True, env=dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}"))
    assert run.returncode == 1 and "not the pinned" in run.stderr, run.stderr
    assert not dest.exists()
