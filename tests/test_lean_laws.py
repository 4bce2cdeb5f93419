"""Laws moved out of the Arpit & Bengio chapters: Proposition 3, closed-form integrals, and the
paper-scale store pattern."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from eit.core.store import load_result_from, paper_scale_result
from eit.exact.symbolic import closed_form_integral
from eit.models import weightnorm as wn

M = 50


def _chapter_law3(d, zlaw, c_):
    """law3 of chapters/arpit-bengio-2019/04-weightnorm-gradients.md before the move."""
    inv_c2 = 1 / c_**2 if c_ else 1 / (d - 2)
    e_z2 = M / 2 if zlaw == "bernoulli" else M
    return 2 * d / M * inv_c2 * (1 - 1 / d) * e_z2


@given(st.integers(3, 500), st.sampled_from(["bernoulli", "gaussian"]),
       st.sampled_from([1.0, 2.0, 0.5, None]))
def test_prop3_expectation_is_the_chapter_law(d, z, c):
    assert wn.prop3_expectation(d, M, z=z, row_norm=c) == _chapter_law3(d, z, c)


def test_prop3_expectation_matches_sympy_with_k_n():
    n, m, c = sp.symbols("n m c", positive=True)
    law = 2 * n / (m * c**2) * (1 - wn.k_constant(n) / n) * m / 2
    for d in (2, 3, 10):
        assert wn.prop3_expectation(d, 7, row_norm=2.0) == pytest.approx(
            float(law.subs({n: d, m: 7, c: 2})), rel=1e-15)


def test_prop3_expectation_bad_input():
    with pytest.raises(ValueError, match="z"):
        wn.prop3_expectation(3, 5, z="uniform")
    with pytest.raises(ValueError, match="n"):
        wn.prop3_expectation(2, 5, row_norm=None)
    with pytest.raises(ValueError, match="row_norm"):
        wn.prop3_expectation(3, 5, row_norm=-1.0)


def test_closed_form_integral_is_the_chapters_computations():
    n = sp.Symbol("n", positive=True)
    r2, s2 = sp.symbols("r s^2", positive=True)
    chi2 = r2 ** (n / 2 - 1) * sp.exp(-r2 / 2) / (2 ** (n / 2) * sp.gamma(n / 2))
    for f in (s2 * r2, 1 / (s2 * r2), sp.sqrt(s2 * r2)):  # chapter 4's moments
        old = sp.simplify(sp.gammasimp(sp.integrate(f * chi2, (r2, 0, sp.oo), conds="none")))
        assert closed_form_integral(f * chi2, (r2, 0, sp.oo)) == old
    s = sp.Symbol("s", positive=True)  # chapter 2's Beta integral: hypergeometric values
    half_mass = closed_form_integral((1 - s) ** ((n - 3) / 2) / (2 * sp.sqrt(s)), (s, 0, 1))
    assert sp.simplify(half_mass - sp.beta(sp.Rational(1, 2), (n - 1) / 2) / 2) == 0


def test_closed_form_integral_bad_input():
    x = sp.Symbol("x")
    with pytest.raises(TypeError, match="expr"):
        closed_form_integral("x", (x, 0, 1))
    with pytest.raises(ValueError, match="limits"):
        closed_form_integral(x, (x, 0))


def test_paper_scale_result_default_scale_reads_only(monkeypatch):
    monkeypatch.setenv("EIT_SCALE", "default")
    assert paper_scale_result("no-such-part/none", {}, seed=0, chapter="x") is None
    stored, info = paper_scale_result(   # the stored result's own seed and chapter
        "arpit-bengio-2019/figure-6", {}, seed=2019,
        chapter="arpit-bengio-2019/01-one-layer-norm-preservation.md")
    assert set(stored) == {"relu", "bernoulli"} and "meta" in info
    with pytest.raises(TypeError, match="arrays"):
        paper_scale_result("no-such-part/none", [1.0], seed=0, chapter="x")
    with pytest.raises(TypeError, match="name"):
        paper_scale_result(3, {}, seed=0, chapter="x")


def test_paper_scale_result_calls_a_callable_only_on_the_paper_path(monkeypatch, tmp_path):
    import numpy as np

    (tmp_path / "chapters").mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    monkeypatch.setenv("EIT_BOOK_ROOT", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0)}

    monkeypatch.setenv("EIT_SCALE", "default")
    assert paper_scale_result("part/r", compute, seed=0, chapter="part/01.md") is None
    assert calls == []
    monkeypatch.setenv("EIT_SCALE", "smoke")      # written to _build/smoke-data, never data/
    assert paper_scale_result("part/r", compute, seed=0, chapter="part/01.md") is None
    stored, info = load_result_from(tmp_path / "_build" / "smoke-data", "part/r")
    assert calls == [1] and stored["x"].tolist() == [0.0, 1.0, 2.0]
    assert info["command"] == "./book paper-scale chapters/part/01.md"
    with pytest.raises(TypeError, match=r"arrays\(\) must return a dict"):
        paper_scale_result("part/r", lambda: [1.0], seed=0, chapter="part/01.md")


def test_traditional_sq_ratios_is_the_chapter_law():
    import numpy as np

    ls = np.arange(1, 11)
    for w in (100, 500, 1000):  # trad_h of chapters/arpit-bengio-2019/04-... before the move
        assert np.array_equal(wn.traditional_sq_ratios(500, w, 10), w / (2 * 500) * 0.5 ** (ls - 1))
    with pytest.raises(ValueError, match="depth"):
        wn.traditional_sq_ratios(500, 100, 0)


def test_k_constant_figure_draws_readings_and_bad_input():
    import matplotlib

    matplotlib.use("Agg")
    from eit.plotting.weightnorm import k_constant_figure
    from eit.verdicts.stats import Estimate

    n = sp.Symbol("n", positive=True)
    est = [Estimate(1.0, 0.01, 9), Estimate(1.01, 0.01, 9)]
    fig, axes = k_constant_figure([2, 3], {"gaussian": est, "sphere": est},
                                  {"a": 1 + 1 / n, "b": 1 - 1 / n}, n, max_n=20)
    assert len(axes[0].lines) >= 3
    with pytest.raises(ValueError, match="measured"):
        k_constant_figure([2], {}, {}, n)
    with pytest.raises(ValueError, match="readings"):
        k_constant_figure([2], {"g": est[:1]}, {"a": n, "b": n, "c": n}, n)
