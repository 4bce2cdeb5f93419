"""Negative and positive controls of the regression test (nbval + statistical comparison).

A small notebook measures, on many random two-layer ReLU networks, the mean squared norm ratio
E||h_2||^2/||x||^2 (exactly 1 for He weights), shows it in a table and records a verdict. It is
executed once to make the reference; then the real plugin (``pytest --nbval -p
eit.verdicts.nbval_plugin``) runs it again in a subprocess:

* unchanged: passes, bitwise;
* with another seed (``EIT_SEED=1``): passes, and lists the cells that needed the tolerance;
* with a 2% larger weight variance in one layer (a deliberate library change): fails;
* with the reference's verdict outcome flipped: fails;
* with the reference's exact theory value changed: fails.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from eit.verdicts import compare
from eit.verdicts.records import MIME_TABLE, MIME_VERDICT

PATCH = '''
import eit.sample.laws as _laws
_calls = {"n": 0}
_gaussian = _laws.gaussian
def _perturbed(n_nets, fan_out, fan_in, variance, **kw):
    _calls["n"] += 1
    return _gaussian(n_nets, fan_out, fan_in, variance * (1.02 if _calls["n"] == 2 else 1.0), **kw)
_laws.gaussian = _perturbed
'''

CELLS = [
    "import torch\n"
    "from eit.core.device import device\n"
    "from eit.core.seeds import generator\n"
    "from eit.sample import laws\n"
    "from eit.verdicts import Agreement, PAPER, Table, agree, mean",
    "crit = Agreement(margin=0.02, relative=True)\ncrit",
    "gen = generator(7)\n"
    "n_nets, n = 40000, 20\n"
    "x = torch.ones(n, dtype=torch.float64, device=device()) / n**0.5\n"
    "h = x.expand(n_nets, 1, n)\n"
    "for _ in range(2):\n"
    "    w = laws.gaussian(n_nets, n, n, 2 / n, gen=gen)\n"
    "    h = torch.relu(h @ w.transpose(-2, -1))\n"
    "ratio = mean(h.square().sum(-1)[:, 0])\n"
    "Table(['layers', 'E ratio'], [[2, ratio]])",
    "agree('test2026', 'Lemma 1', 'E ratio = 1', theory=1.0, estimate=ratio, criterion=crit,\n"
    "      scope=PAPER, drawn_by=gen)",
    "print('exact:', 2 + 2)",
]
ROOT = Path(__file__).resolve().parent.parent


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.pop("EIT_SEED", None)
    env.update(OMP_NUM_THREADS="1", EIT_SCALE="default", **extra)
    return env


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("control")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    old = os.environ.pop("EIT_SEED", None)
    old_device = os.environ.get("EIT_DEVICE")
    if os.environ.get("EIT_GUARD") == "1":   # the device the checks run on (conftest.py):
        os.environ["EIT_DEVICE"] = "sim"     # its random streams are not the CPU's chunked ones
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        if old is not None:
            os.environ["EIT_SEED"] = old
        if old_device is None:
            os.environ.pop("EIT_DEVICE", None)
        else:
            os.environ["EIT_DEVICE"] = old_device
    path = folder / "control.ipynb"
    nbformat.write(nb, path)
    return path


def _run(paths, env: dict, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the plugin on notebooks; return the process and, per notebook, whether it failed."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    junit = paths[0].parent / "junit.xml"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", *map(str, paths), "--nbval", "--nbval-current-env",
         "-p", "eit.verdicts.nbval_plugin", "-p", "no:cacheprovider", "-q", *extra,
         "--junitxml", str(junit), "--rootdir", str(paths[0].parent), "-c", os.devnull],
        capture_output=True, text=True, env=env, cwd=paths[0].parent, timeout=600)
    failed = {p.stem: False for p in paths}
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed[case.get("classname", "").removesuffix(".ipynb")] = True
    return res, failed


def _variant(reference: Path, name: str, edit) -> Path:
    nb = nbformat.read(reference, as_version=4)
    edit(nb)
    path = reference.parent / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _outputs_with(nb, mime):
    return [o for c in nb.cells for o in c.get("outputs", []) if mime in o.get("metadata", {})]


def _perturb_library(nb):
    nb.cells[0].source = PATCH + "\n" + nb.cells[0].source  # nbval runs the new source


def _flip_verdict(nb):
    _outputs_with(nb, MIME_VERDICT)[0]["metadata"][MIME_VERDICT]["outcome"] = "refuted"


def _change_theory(nb):
    _outputs_with(nb, MIME_VERDICT)[0]["metadata"][MIME_VERDICT]["values"][0]["theory"] = 1.0001


def _change_printed(nb):
    nb.cells[-1].outputs[0]["text"] = "exact: 5\n"


def _change_rendering(nb):
    out = _outputs_with(nb, MIME_TABLE)[0]
    out["data"]["text/plain"] = "(rendered differently)\n" + out["data"]["text/plain"]


def test_unchanged_notebook_passes(reference):
    res, failed = _run(reference, _env())
    assert not any(failed.values()), res.stdout[-3000:] + res.stderr[-2000:]
    assert "statistical tolerance" not in res.stdout


def test_another_seed_passes_thanks_to_the_tolerance(reference):
    res, failed = _run(reference, _env(EIT_SEED="1"))
    assert not any(failed.values()), res.stdout[-3000:] + res.stderr[-2000:]
    assert "cells that passed only thanks to the statistical tolerance" in res.stdout


def test_negative_controls_fail(reference):
    """A 2% variance change in one layer, a flipped verdict, a changed exact value, a changed
    printed value: each must fail; a changed rendering whose record agrees must pass."""
    variants = {"perturbed": _perturb_library, "flipped": _flip_verdict,
                "theory": _change_theory, "printed": _change_printed,
                "rendering": _change_rendering}
    paths = [_variant(reference, name, edit) for name, edit in variants.items()]
    res, failed = _run(paths, _env())
    assert failed == {"perturbed": True, "flipped": True, "theory": True, "printed": True,
                      "rendering": False}, res.stdout[-4000:]
    assert "statistical comparison of the eit records failed" in res.stdout
    assert "outcome 'refuted' became 'confirmed'" in res.stdout
    assert "theory 1.0001 became 1.0" in res.stdout


def test_strict_mode_compares_bitwise(reference):
    path = _variant(reference, "rendering_strict", _change_rendering)
    res, failed = _run(path, _env(), "--eit-strict")
    assert failed["rendering_strict"], res.stdout[-3000:]


# -- the comparison rules, unit by unit ----------------------------------------------------
def _est(value, se, n=100):
    return {"type": "estimate", "value": value, "se": se, "n": n, "df": n - 1}


def test_estimates_compare_by_combined_standard_error():
    assert compare.compare_values(_est(1.0, 0.01), _est(1.02, 0.01), "x").ok
    assert not compare.compare_values(_est(1.0, 0.01), _est(1.1, 0.01), "x").ok
    assert compare.compare_values(_est(1.0, 0.01), _est(1.02, 0.01), "x").tolerated


def test_proportions_compare_by_fisher_exact_test():
    p = {"type": "proportion", "k": 50, "n": 1000}
    assert compare.compare_values(p, {**p, "k": 60}, "p").ok
    assert not compare.compare_values(p, {**p, "k": 200}, "p").ok


def test_exact_values_compare_exactly():
    a = {"type": "exact", "value": "sqrt(2)/2"}
    assert not compare.compare_values(a, {**a, "value": "sqrt(2)/3"}, "e").ok
    f = {"type": "exact", "value": 0.1 + 0.2, "float": True}
    assert compare.compare_values(f, {**f, "value": 0.3}, "e").ok  # last-bit libm differences
    assert not compare.compare_values(f, {**f, "value": 0.3001}, "e").ok


def test_verdict_fields_compare_exactly():
    rec = {"schema": 2, "id": "v-1", "paper": "p", "claim": "c", "statement": "s",
           "outcome": "confirmed", "scope": "paper", "kind": "test", "theory": "1",
           "evidence": "", "correction": "", "criterion": {"criterion": "Agreement"},
           "test": {"statistic": "max |t|", "family": 1, "alpha": 0.001, "threshold": 3.3},
           "values": [_est(1.0, 0.01)]}
    assert compare.compare_verdicts(rec, copy.deepcopy(rec)).ok
    for key, value in (("outcome", "refuted"), ("scope", "substitute"), ("theory", "2"),
                       ("criterion", {"criterion": "Inequality"})):
        assert not compare.compare_verdicts(rec, {**rec, key: value}).ok, key
    assert not compare.compare_verdicts(rec, {**rec, "values": []}).ok


def test_thresholds_at_estimated_degrees_of_freedom_compare_statistically():
    """The critical value at the worst point moves with the sample; an exact one must not."""
    rec = {"schema": 2, "claim": "c", "outcome": "confirmed", "kind": "test",
           "test": {"statistic": "max |t|", "family": 1, "alpha": 0.001, "threshold": 3.80407},
           "values": [_est(1.0, 0.01)]}
    moved = copy.deepcopy(rec)
    moved["test"]["threshold"] = 3.80409
    res = compare.compare_verdicts(rec, moved)
    assert res.ok and res.tolerated
    moved["test"]["threshold"] = 5.06   # another worst point, with other degrees of freedom
    assert compare.compare_verdicts(rec, moved).tolerated
    moved["outcome"] = "inconclusive"
    assert not compare.compare_verdicts(rec, moved).ok
    exact = {**copy.deepcopy(rec), "values": [{"type": "exact", "value": "1"}]}
    moved = copy.deepcopy(exact)
    moved["test"]["threshold"] = 3.80409
    assert not compare.compare_verdicts(exact, moved).ok


def test_table_shapes_must_match():
    t = {"caption": "", "columns": ["a"], "rows": [[_est(1, 0.1)]]}
    assert compare.compare_tables(t, json.loads(json.dumps(t))).ok
    assert not compare.compare_tables(t, {**t, "rows": []}).ok
