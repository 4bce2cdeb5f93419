"""Notebooks that run anywhere (issue 26, items 3, 6, 7): outside a clone, on Binder, on Colab.

* the package ships ``data/`` (``eit._data``), so that :func:`eit.core.store.load_result`
  loads and verifies a stored result from an empty folder (no book root);
* the setup cell prepended to downloadable notebooks pins ``eit`` to the commit built, is valid
  Python once IPython's magics are transformed, and installs only what the kernel lacks;
* Binder's environment (``binder/``) holds the runtime only, at the versions of the lock, with
  JupyterLab and jupyterlab-myst; the book has a Colab button; ``./book lab`` gets jupyterlab-myst.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
import yaml
from extension import load

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = {"torch", "numpy", "scipy", "sympy", "matplotlib", "haarpy", "scikit-learn",
           "jupytext", "ipykernel"}
TOOLCHAIN = {"jupyter-book", "sphinx", "myst-nb", "myst-parser", "sphinx-book-theme", "pytest",
             "pytest-xdist", "hypothesis", "ruff", "nbval", "playwright", "beautifulsoup4",
             "setuptools", "nbclient", "sphinx-proof", "sphinxcontrib-bibtex"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def pins(path: Path) -> dict[str, str]:
    """Package -> pinned version of a requirements file (Linux entries where there are two)."""
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)(\s*;\s*([^\\]+))?", line)
        if m and (m.group(4) is None or "linux" in m.group(4) and "!=" not in m.group(4)):
            found[m.group(1).lower()] = m.group(2)
    return found


def lab_line() -> dict[str, str]:
    m = re.search(r"^# lab: *(\S.*?)\s*$", (ROOT / "requirements.in").read_text(), re.M)
    return dict(spec.lower().split("==") for spec in m.group(1).split())


# --- item 3: stored results outside a clone ---------------------------------------------------

@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """eit installed from a wheel of this checkout into a folder of its own (no clone)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    for folder in ("lib", "data"):
        shutil.copytree(ROOT / folder, src / folder)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", ".", "-w", tmp / "out"],
                   cwd=src, check=True, capture_output=True)
    site = tmp / "site"
    with zipfile.ZipFile(next((tmp / "out").glob("eit-*.whl"))) as whl:
        whl.extractall(site)
    return site


def run_outside(site: Path, code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``code`` from an empty folder, with eit imported from ``site``."""
    env = {k: v for k, v in os.environ.items() if k not in ("EIT_BOOK_ROOT", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    empty = tmp_path / "empty"
    empty.mkdir()
    return subprocess.run([sys.executable, "-c", code], cwd=empty, env=env,
                          capture_output=True, text=True)


def a_result() -> str:
    """A stored result of data/ (an .npz with its provenance)."""
    lines = (ROOT / "data" / "SHA256SUMS").read_text().split("\n")
    names = [line.split()[1][:-4] for line in lines
             if line.endswith(".npz") and not line.split()[1].startswith("datasets/")]
    return names[0]


def test_wheel_ships_data_with_its_manifest(installed):
    packaged = installed / "eit" / "_data"
    assert (packaged / "SHA256SUMS").read_text() == (ROOT / "data" / "SHA256SUMS").read_text()
    for line in (ROOT / "data" / "SHA256SUMS").read_text().splitlines():
        assert (packaged / line.split()[1]).is_file(), line


def test_stored_result_loads_and_verifies_outside_a_clone(installed, tmp_path):
    name = a_result()
    code = (
        "import hashlib, pathlib, eit\n"
        "from eit.core import store\n"
        f"assert pathlib.Path(eit.__file__).is_relative_to({str(installed)!r}), eit.__file__\n"
        f"arrays, prov = store.load_result({name!r})\n"
        "assert store.verify() == [], store.verify()\n"
        f"npz = store.stored_dir() / {name + '.npz'!r}\n"
        "assert hashlib.sha256(npz.read_bytes()).hexdigest() == prov['sha256']\n"
        "print('loaded', len(arrays), prov['sha256'])\n")
    done = run_outside(installed, code, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("loaded")


def test_a_corrupted_packaged_result_is_refused(installed, tmp_path):
    """The provenance checks of the store hold for the installed copy too."""
    site = tmp_path / "site"
    shutil.copytree(installed, site)
    name = a_result()
    npz = site / "eit" / "_data" / f"{name}.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    done = run_outside(site, f"from eit.core import store\nstore.load_result({name!r})\n",
                       tmp_path)
    assert done.returncode != 0
    assert "DataError" in done.stderr


# --- item 3 and 6: the setup cell of downloadable notebooks -----------------------------------

def setup_code(ref: str = COMMIT) -> str:
    build = load("eit_build")
    cells = build.getting_eit_cells("https://github.com/o/r", ref, load().pinned(ROOT))
    return "".join(cells[1]["source"])


def test_setup_cell_is_python_after_magics():
    from IPython.core.inputtransformer2 import TransformerManager

    compile(TransformerManager().transform_cell(setup_code()), "<setup cell>", "exec")


def test_setup_cell_on_colab_installs_eit_at_the_commit_and_keeps_torch(monkeypatch):
    """Colab: torch present, eit absent: pip gets eit at the commit and only what is missing."""
    from IPython.core.inputtransformer2 import TransformerManager

    present = {"torch", "numpy"}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: real(name, *a) if name in present | {"importlib"}
                        else None)
    calls = []
    namespace = {}

    def run_line_magic(magic, line):
        calls.append((magic, line.format(**namespace)))

    shell = types.SimpleNamespace(run_line_magic=run_line_magic)
    namespace["get_ipython"] = lambda: shell
    exec(TransformerManager().transform_cell(setup_code()), namespace)
    [(magic, line)] = calls
    assert magic == "pip"
    assert f'"eit @ git+https://github.com/o/r@{COMMIT}"' in line
    assert "torch==" not in line and "numpy==" not in line
    assert f"scipy=={pins(ROOT / 'requirements.txt')['scipy']}" in line


class FakeApp:
    """What fix_downloads reads of a Sphinx application."""

    def __init__(self, srcdir: Path, docname: str):
        self.srcdir = str(srcdir)
        self.config = types.SimpleNamespace(html_theme_options={
            "repository_url": "https://github.com/o/r", "repository_branch": "main"})
        self.env = types.SimpleNamespace(found_docs={docname},
                                         doc2path=lambda d: srcdir / f"{d}.ipynb")


def downloaded(tmp_path: Path, srcdir: Path) -> str:
    """The first code cell of a downloadable notebook after fix_downloads."""
    docname = "chapters/x/01-x"
    path = tmp_path / "out" / "_sources" / f"{docname}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    load("eit_build").fix_downloads(FakeApp(srcdir, docname), tmp_path / "out")
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def test_downloads_pin_eit_to_the_commit_built(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("this checkout has no git")
    assert f'git+https://github.com/o/r@{head.stdout.strip()}"' in downloaded(tmp_path, ROOT)


def test_downloads_fall_back_to_the_branch_without_git(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "requirements.txt", src)
    env_git = os.environ.get("GIT_CEILING_DIRECTORIES")
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    try:
        assert 'git+https://github.com/o/r@main"' in downloaded(tmp_path, src)
    finally:
        if env_git is None:
            os.environ.pop("GIT_CEILING_DIRECTORIES")
        else:
            os.environ["GIT_CEILING_DIRECTORIES"] = env_git


# --- item 6: Binder and Colab -----------------------------------------------------------------

def test_binder_holds_the_runtime_at_the_locked_versions():
    binder = pins(ROOT / "binder" / "requirements.txt")
    lock = pins(ROOT / "requirements.txt")
    assert set(binder) == RUNTIME | set(lab_line())
    assert not set(binder) & TOOLCHAIN
    assert {p: binder[p] for p in RUNTIME} == {p: lock[p] for p in RUNTIME}
    assert {p: binder[p] for p in lab_line()} == lab_line()


def test_binder_uses_its_own_folder_without_the_root_environment():
    """repo2docker reads binder/ only: no environment.yml there (the root one installs the
    whole toolchain and defeats the pre-built environment); eit without dependencies."""
    assert not (ROOT / "binder" / "environment.yml").exists()
    assert "-r " not in (ROOT / "binder" / "requirements.txt").read_text()
    post = (ROOT / "binder" / "postBuild")
    assert os.access(post, os.X_OK)
    assert "pip install --no-deps -e ." in post.read_text()


def test_config_has_binder_and_colab_buttons():
    buttons = yaml.safe_load((ROOT / "_config.yml").read_text())["launch_buttons"]
    assert buttons["binderhub_url"] == "https://mybinder.org"
    assert buttons["colab_url"] == "https://colab.research.google.com"


# --- item 7: MyST in JupyterLab ---------------------------------------------------------------

def test_lab_installs_jupyterlab_myst():
    assert "jupyterlab-myst" in lab_line()
    lab = (ROOT / "requirements-lab.txt").read_text()
    m = re.search(r"^jupyterlab-myst==(\S+) \\\n(\s+--hash=sha256:[0-9a-f]{64}.*\n)+", lab, re.M)
    assert m and m.group(1) == lab_line()["jupyterlab-myst"]
    assert "jupyterlab_myst" in (ROOT / "book").read_text().split("  lab)")[1].split(";;")[0]
