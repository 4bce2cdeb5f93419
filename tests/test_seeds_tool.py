"""tools/seeds.py on a synthetic book: the comparison, the predicted number of flips, and a
flipped record printed with its own re-run agreement (no chapter is executed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from eit.verdicts import Inequality, at_least, stability
from eit.verdicts.records import MIME_VERDICT
from eit.verdicts.stats import Estimate

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("seeds_tool", ROOT / "tools" / "seeds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _notebook(path: Path, estimates: list[float]) -> list[dict]:
    """A notebook whose outputs are verdicts on estimates against the bound 1."""
    crit = Inequality(alpha=0.01)
    recs = [at_least("k", f"claim {i}", "s", estimate=Estimate(e, 0.1, 50), bound=1.0,
                     criterion=crit, scope="paper", drawn_by=None).record()
            for i, e in enumerate(estimates)]
    outputs = [{"output_type": "display_data", "data": {"text/plain": ""},
                "metadata": {MIME_VERDICT: r}} for r in recs]
    cells = [{"cell_type": "code", "source": "", "metadata": {}, "outputs": outputs,
              "execution_count": 1}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return recs


def test_a_flip_is_printed_with_its_agreement_and_the_expected_flips(tmp_path, monkeypatch,
                                                                   capsys):
    book = tmp_path / "book"
    source = book / "chapters" / "part" / "01-x.md"
    source.parent.mkdir(parents=True)
    source.write_text("```{code-cell} ipython3\n```\n")
    ref = _notebook(source.with_suffix(".ipynb"), [2.0, 1.3])   # 10 and 3 se above the bound
    monkeypatch.setenv("EIT_BOOK_ROOT", str(book))
    tool = _tool()

    def run_all(sources, *, jobs, output_dir, timeout, done):
        # the re-run: the first claim holds again, the second falls below the bound
        _notebook(tool.output_path(sources[0], output_dir), [2.0, 0.5])
        done(sources[0])
        return []

    monkeypatch.setattr(tool, "run_all", run_all)
    assert tool.main([str(source), "--seed", "3"]) == 1
    out = capsys.readouterr().out
    agree = [stability.of_record(r).probability for r in ref]
    assert 0.5 < agree[1] < 0.999 < agree[0]
    assert f"(claim 1: its recorded re-run agreement is {agree[1]:.4g})" in out
    assert "claim 0: its recorded" not in out
    assert (f"the 2 statistical records compared predict {(1 - agree[0]) + (1 - agree[1]):.2f}"
            " outcome flips on average") in out
