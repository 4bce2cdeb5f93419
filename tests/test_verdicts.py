"""The verdict protocol: estimates, criteria, checks and records (DESIGN.md section 3a)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given
from hypothesis import strategies as st

from eit.verdicts import (
    CONFIRMED,
    CONSISTENCY,
    CORRECTED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PAPER,
    REFUTED,
    SUBSTITUTE,
    Agreement,
    Detection,
    Estimate,
    Exact,
    Inequality,
    Statistic,
    Table,
    agree,
    at_least,
    at_most,
    bound,
    consistency,
    detects,
    exact,
    holds,
    mean,
    order,
    proportion,
    records,
    stats,
)

HEAD = ("key2026", "Lemma 1", "E X = 1")
EXACT_LAW = Agreement(margin=0.05, relative=True)
APPROX = Agreement(margin=0.05, relative=True, exact_law=False)
INEQ = Inequality()


def est(value, se, n=400):
    return Estimate(value, se, n, df=n - 1)


# -- estimates ---------------------------------------------------------------------------------
def test_mean_and_se():
    e = mean([1.0, 2.0, 3.0, 4.0])
    assert e.value == 2.5 and math.isclose(e.se, math.sqrt(5 / 3 / 4)) and e.df == 3
    assert str(Estimate(1.23456, 0.0123, 10)) == "1.235 ± 0.012"


def test_arithmetic_propagates_independent_errors():
    a, b = est(2.0, 0.3), est(1.0, 0.4)
    assert math.isclose((a - b).se, 0.5) and (a - b).value == 1.0
    assert math.isclose((a / b).se, math.hypot(0.3 / 1.0, 2.0 * 0.4 / 1.0))
    assert math.isclose((3 * a).se, 0.9) and math.isclose(a.log().se, 0.15)
    assert (a + 1).se == a.se


@pytest.mark.parametrize(("call", "name"), [
    (lambda: Estimate(float("nan"), 1, 2), "value"),
    (lambda: Estimate(1, -0.1, 2), "se"),
    (lambda: Estimate(1, float("inf"), 2), "se"),
    (lambda: Estimate(1, 0.1, 0), "n"),
    (lambda: Estimate(1, 0.1, 2, df=0), "df"),
    (lambda: mean([1.0]), "samples"),
    (lambda: mean([1.0, float("nan")]), "samples"),
    (lambda: mean(torch.tensor([1 + 1j, 2 + 0j])), "samples"),
    (lambda: stats.mean_se(torch.ones(3, 2), dim=5), "dim"),
    (lambda: stats.log_mean([1.0, -1.0]), "samples"),
    (lambda: proportion(5, 3), "successes"),
    (lambda: proportion(1, 0), "trials"),
    (lambda: proportion(1, 3, confidence=1.5), "confidence"),
    (lambda: Statistic(float("nan")), "value"),
    (lambda: Exact(float("nan")), "value"),
])
def test_bad_estimates_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


@given(st.integers(0, 50), st.integers(1, 50))
def test_clopper_pearson_contains_the_estimate(k, extra):
    p = proportion(k, k + extra)
    assert 0 <= p.lo <= p.value <= p.hi <= 1


def test_clopper_pearson_known_value():
    assert math.isclose(proportion(0, 4000).hi, 1 - 0.025 ** (1 / 4000), rel_tol=1e-9)


# -- agreement ------------------------------------------------------------------------------
def test_agree_outcomes_for_an_exact_law():
    assert agree(*HEAD, theory=1.0, estimate=est(1.01, 0.005), criterion=EXACT_LAW,
                 scope=PAPER).outcome == CONFIRMED
    # contains the theory but too wide to pin it within 5%: the test could not have failed
    assert agree(*HEAD, theory=1.0, estimate=est(1.01, 0.05), criterion=EXACT_LAW,
                 scope=PAPER).outcome == INCONCLUSIVE
    # excludes the theory: an exact law is refuted even by a small deviation
    assert agree(*HEAD, theory=1.0, estimate=est(1.03, 0.002), criterion=EXACT_LAW,
                 scope=PAPER).outcome == REFUTED


def test_agree_outcomes_for_an_approximate_law():
    assert agree(*HEAD, theory=1.0, estimate=est(1.03, 0.002), criterion=APPROX,
                 scope=PAPER).outcome == CONFIRMED
    assert agree(*HEAD, theory=1.0, estimate=est(1.2, 0.002), criterion=APPROX,
                 scope=PAPER).outcome == REFUTED
    assert agree(*HEAD, theory=1.0, estimate=est(1.05, 0.01), criterion=APPROX,
                 scope=PAPER).outcome == INCONCLUSIVE


def test_a_failure_on_a_substitute_is_not_a_refutation():
    v = agree(*HEAD, theory=1.0, estimate=est(1.3, 0.002), criterion=EXACT_LAW,
              scope=SUBSTITUTE)
    assert v.outcome == NOT_REPRODUCED


def test_agree_with_a_correction():
    kw = dict(estimate=est(0.5, 0.002), criterion=EXACT_LAW, scope=PAPER)
    assert agree(*HEAD, theory=1.0, corrected=0.5, correction="halve it",
                 **kw).outcome == CORRECTED
    assert agree(*HEAD, theory=1.0, corrected=0.7, correction="x", **kw).outcome == REFUTED


def test_family_wise_threshold_grows_with_the_number_of_points():
    one = agree(*HEAD, theory=1.0, estimate=est(1.0, 0.001), criterion=EXACT_LAW, scope=PAPER)
    many = agree(*HEAD, theory=[1.0] * 50, estimate=[est(1.0, 0.001)] * 50, criterion=EXACT_LAW,
                 scope=PAPER)
    assert many.test["threshold"] > one.test["threshold"]


def test_small_samples_use_student_t():
    e5 = Estimate(1.0, 0.01, 5, df=4)
    e_inf = Estimate(1.0, 0.01, 5)
    assert e5.critical(0.001) > 2 * e_inf.critical(0.001)


def test_agree_refuses_nan_and_missing_criterion():
    with pytest.raises(ValueError, match="theory"):
        agree(*HEAD, theory=float("nan"), estimate=est(1, 0.1), criterion=EXACT_LAW, scope=PAPER)
    with pytest.raises(ValueError, match=r"theory\[1\]"):
        agree(*HEAD, theory=[1.0, float("nan")], estimate=[est(1, 0.1)] * 2, criterion=EXACT_LAW,
              scope=PAPER)
    with pytest.raises(TypeError, match="criterion"):
        agree(*HEAD, theory=1.0, estimate=est(1, 0.1), criterion=4.0, scope=PAPER)
    with pytest.raises(ValueError, match="scope"):
        agree(*HEAD, theory=1.0, estimate=est(1, 0.1), criterion=EXACT_LAW, scope="everywhere")
    with pytest.raises(TypeError, match=r"estimate\[1\]"):
        agree(*HEAD, theory=[1.0, 1.0], estimate=[est(1, 0.1), 1.0], criterion=EXACT_LAW,
              scope=PAPER)


@pytest.mark.parametrize("margin", [float("inf"), 0.0, -1.0, float("nan")])
def test_margins_must_be_finite_and_positive(margin):
    with pytest.raises(ValueError, match="margin"):
        Agreement(margin=margin)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, -0.1, float("nan")])
def test_alpha_must_be_a_level(alpha):
    with pytest.raises(ValueError, match="alpha"):
        Inequality(alpha=alpha)


@given(st.floats(-5, 5), st.floats(1e-4, 1.0))
def test_agreement_is_never_confirmed_beyond_the_margin(shift, se):
    v = agree(*HEAD, theory=1.0, estimate=est(1.0 + shift, se), criterion=APPROX, scope=PAPER)
    if v.outcome == CONFIRMED:
        assert abs(shift) + se <= 0.05 + 1e-12


# -- inequalities and effects -----------------------------------------------------------------
@pytest.mark.parametrize("check, kwargs, measured", [
    (agree, {"theory": 1.0, "criterion": EXACT_LAW}, "estimate"),
    (at_most, {"bound": 1.0, "criterion": INEQ}, "estimate"),
    (at_least, {"bound": 1.0, "criterion": INEQ}, "estimate"),
    (bound, {"bound": 0.1, "criterion": INEQ}, "failures"),
])
def test_pointwise_checks_share_one_validation(check, kwargs, measured):
    one = est(1.0, 0.01) if measured == "estimate" else proportion(1, 100)
    good = check(*HEAD, scope=PAPER, **{measured: [one, one]}, **kwargs)
    assert len([r for r in good.values if r["name"].startswith("point")]) == 2
    with pytest.raises(ValueError, match="labels"):
        check(*HEAD, scope=PAPER, **{measured: [one, one]}, labels=["a"], **kwargs)
    with pytest.raises(ValueError, match="kind"):
        check(*HEAD, scope=PAPER, **{measured: one}, kind="guess", **kwargs)
    with pytest.raises(TypeError, match="criterion"):
        check(*HEAD, scope=PAPER, **{measured: one}, **{**kwargs, "criterion": Detection("t")})
    with pytest.raises(TypeError, match=measured):
        check(*HEAD, scope=PAPER, **{measured: 1.0}, **kwargs)


def test_at_most_and_at_least():
    assert at_most(*HEAD, estimate=est(1.5, 0.1), bound=2.0, criterion=INEQ,
                   scope=PAPER).outcome == CONFIRMED
    assert at_most(*HEAD, estimate=est(2.5, 0.1), bound=2.0, criterion=INEQ,
                   scope=PAPER).outcome == REFUTED
    assert at_most(*HEAD, estimate=est(1.95, 0.1), bound=2.0, criterion=INEQ,
                   scope=PAPER).outcome == INCONCLUSIVE
    v = at_most(*HEAD, estimate=est(0.78, 0.01), bound=8.2e8, criterion=INEQ, scope=PAPER)
    assert v.outcome == CONFIRMED and v.kind == CONSISTENCY
    assert at_least(*HEAD, estimate=est(1.5, 0.1), bound=1.0, criterion=INEQ,
                    scope=PAPER).outcome == CONFIRMED


def test_probability_bounds():
    assert bound(*HEAD, bound=0.1, failures=proportion(30, 1000), criterion=INEQ,
                 scope=PAPER).outcome == CONFIRMED
    assert bound(*HEAD, bound=0.01, failures=proportion(100, 1000), criterion=INEQ,
                 scope=PAPER).outcome == REFUTED
    v = bound(*HEAD, bound=0.05, failures=proportion(0, 20000), criterion=INEQ, scope=PAPER)
    assert v.kind == CONSISTENCY  # the true probability is about 0: the bound is not tested
    assert bound(*HEAD, bound=1.0, failures=proportion(3, 10), criterion=INEQ,
                 scope=PAPER).kind == CONSISTENCY
    assert bound(*HEAD, bound=0.05, failures=proportion(0, 8), criterion=INEQ,
                 scope=PAPER).outcome == INCONCLUSIVE


def test_order_of_estimates_and_proportions():
    kw = dict(criterion=INEQ, scope=PAPER)
    assert order(*HEAD, larger=est(2.0, 0.1), smaller=est(1.0, 0.1), **kw).outcome == CONFIRMED
    assert order(*HEAD, larger=est(1.0, 0.1), smaller=est(2.0, 0.1), **kw).outcome == REFUTED
    assert order(*HEAD, larger=est(1.1, 0.1), smaller=est(1.0, 0.1), **kw).outcome == INCONCLUSIVE
    assert order(*HEAD, larger=proportion(90, 100), smaller=proportion(10, 100),
                 **kw).outcome == CONFIRMED
    five = [Estimate(v, 0.2, 5, df=4) for v in (1.0, 1.4)]
    assert order(*HEAD, larger=five[1], smaller=five[0], **kw).outcome == INCONCLUSIVE


def test_a_non_detection_is_inconclusive_never_refuted():
    crit = Detection("Kendall tau")
    assert detects(*HEAD, statistic=Statistic(0.5), p_value=1e-6, criterion=crit,
                   scope=PAPER).outcome == CONFIRMED
    v = detects(*HEAD, statistic=Statistic(0.1), p_value=0.3, criterion=crit, scope=PAPER,
                detectable=0.4)
    assert v.outcome == INCONCLUSIVE
    assert v.test["detectable"] == 0.4 and "detectable effect 0.4" in v.test["text"]
    # a non-detection must say what it could have detected
    with pytest.raises(ValueError, match="detectable"):
        detects(*HEAD, statistic=Statistic(0.1), p_value=0.3, criterion=crit, scope=PAPER)
    with pytest.raises(ValueError, match="detectable"):
        detects(*HEAD, statistic=Statistic(0.1), p_value=0.3, criterion=crit, scope=PAPER,
                detectable=-1.0)
    with pytest.raises(ValueError, match="p_value"):
        detects(*HEAD, statistic=Statistic(0.1), p_value=float("nan"), criterion=crit,
                scope=PAPER)


# -- exact checks ---------------------------------------------------------------------------
def test_exact_and_holds():
    x = sp.Symbol("x")
    assert exact(*HEAD, printed=sp.sin(x) ** 2 + sp.cos(x) ** 2, derived=1,
                 scope=PAPER).outcome == CONFIRMED
    v = exact(*HEAD, printed=2 * x, derived=3 * x, scope=PAPER, correction="3x")
    assert v.outcome == CORRECTED and v.kind == "exact"
    with pytest.raises(ValueError, match="printed"):
        exact(*HEAD, printed=float("nan"), derived=float("nan"), scope=PAPER)
    assert holds(*HEAD, holds=np.bool_(True), evidence="e", scope=PAPER).outcome == CONFIRMED
    with pytest.raises(TypeError, match="holds"):
        holds(*HEAD, holds=1, evidence="e", scope=PAPER)
    v = holds(*HEAD, holds=False, evidence="e", scope=PAPER, if_wrong=CORRECTED, correction="c",
              corrected=False)
    assert v.outcome == REFUTED


def test_consistency_checks_are_recorded_as_such():
    v = consistency(*HEAD, holds=True, evidence="by construction", reason="an identity",
                    scope=PAPER)
    assert v.kind == CONSISTENCY and v.outcome == CONFIRMED


# -- pre-registration -----------------------------------------------------------------------
def test_a_criterion_declared_after_the_measurement_is_refused():
    late = Agreement(margin=0.1)
    object.__setattr__(late, "declared_in", 5)
    e = est(1.0, 0.01)
    object.__setattr__(e, "made_in", 5)
    with pytest.raises(ValueError, match="declared"):
        agree(*HEAD, theory=1.0, estimate=e, criterion=late, scope=PAPER)
    object.__setattr__(e, "made_in", 6)
    assert agree(*HEAD, theory=1.0, estimate=e, criterion=late, scope=PAPER).outcome == CONFIRMED


def test_a_detection_declared_after_the_measurement_is_refused():
    """Issue 24 item 4: detects and detects_positive never checked the order."""
    from eit.verdicts import Detection, Statistic, detects
    from eit.verdicts.checks import detects_positive
    late = Detection("one-sided t-test")
    object.__setattr__(late, "declared_in", 5)
    stat, e = Statistic(0.3), est(1.0, 0.01)
    for x in (stat, e):
        object.__setattr__(x, "made_in", 5)
    with pytest.raises(ValueError, match="declared"):
        detects(*HEAD, statistic=stat, p_value=1e-6, criterion=late, scope=PAPER)
    with pytest.raises(ValueError, match="declared"):
        detects_positive(*HEAD, e, criterion=late, scope=PAPER)
    for x in (stat, e):
        object.__setattr__(x, "made_in", 6)
    assert detects(*HEAD, statistic=stat, p_value=1e-6, criterion=late,
                   scope=PAPER).outcome == CONFIRMED
    assert detects_positive(*HEAD, e, criterion=late, scope=PAPER).outcome == CONFIRMED


# -- records --------------------------------------------------------------------------------
def test_verdict_records_carry_typed_numbers_and_an_anchor():
    v = agree(*HEAD, theory=1.0, estimate=est(1.01, 0.005), criterion=EXACT_LAW, scope=PAPER)
    bundle, meta = v._repr_mimebundle_()
    rec = meta[records.MIME_VERDICT]
    assert rec["schema"] == 2 and rec["id"] == v.id and f"id='{v.id}'" in bundle["text/html"]
    assert rec["values"][0]["type"] == "estimate" and rec["values"][0]["se"] == 0.005
    assert rec["criterion"]["criterion"] == "Agreement" and rec["test"]["family"] == 1


def test_tables_refuse_bare_floats():
    with pytest.raises(TypeError, match="ambiguous"):
        Table(["a"], [[0.5]])
    t = Table(["n", "mean", "theory"], [[10, est(1.0, 0.01), Exact(1.0)]])
    _, meta = t._repr_mimebundle_()
    assert [c["type"] for c in meta[records.MIME_TABLE]["rows"][0]] == ["exact", "estimate",
                                                                       "exact"]


def test_tables_typeset_sympy_cells_and_keep_their_text():
    t = Table(["$n$", "$K_n$"], [[2, sp.sqrt(2) / 2 + sp.Rational(1, 3)]])
    bundle, _ = t._repr_mimebundle_()
    assert "\\frac{\\sqrt{2}}{2}" in bundle["text/html"] and "sqrt(" not in bundle["text/html"]
    assert "1/3 + sqrt(2)/2" in bundle["text/plain"]       # the plain text stays SymPy's


def test_refuted_is_not_allowed_on_a_substitute():
    with pytest.raises(ValueError, match="substitute"):
        records.Verdict("p", "c", "s", REFUTED, SUBSTITUTE, "test", "t", "m")


def test_math_in_statements_is_typeset():
    assert "\\(x^2\\)" in records.tex_to_html("a $x^2$ b")


def test_an_inconclusive_bound_states_what_it_could_detect():
    crit = Inequality(alpha=0.01)
    v = at_most(*HEAD, estimate=Estimate(1.0, 0.5, 30, df=29), bound=1.2, criterion=crit,
                scope=PAPER)
    assert v.outcome == INCONCLUSIVE
    c = Estimate(1.0, 0.5, 30, df=29).critical(0.01, sides=1)
    assert v.test["detectable"] == pytest.approx(c * 0.5)
    assert "detectable difference" in v.test["text"]


def test_agree_records_a_consistency_check_apart():
    crit = Agreement(margin=0.05, relative=True)
    v = agree(*HEAD, theory=1.0, estimate=Estimate(1.001, 0.001, 400), criterion=crit,
              scope=PAPER, kind=CONSISTENCY)
    assert v.outcome == CONFIRMED and v.kind == CONSISTENCY
    with pytest.raises(ValueError, match="kind"):
        agree(*HEAD, theory=1.0, estimate=Estimate(1.001, 0.001, 400), criterion=crit,
              scope=PAPER, kind="proof")


def test_detectable_effects_of_the_one_sided_tests():
    e = Estimate(0.3, 0.1, 50, df=49)
    p, d = stats.positive(e, Estimate(1.0, 0.1, 50, df=49), alpha=0.001)
    assert p == pytest.approx(float(__import__("scipy").stats.t.sf(3.0, 49)))
    assert d == pytest.approx(e.critical(0.001, sides=1) * 0.1)
    # simulated under the null, the detectable tau is the (1 - alpha) quantile
    rng = np.random.default_rng(0)
    n = 60
    taus = [__import__("scipy").stats.kendalltau(rng.normal(size=n), rng.normal(size=n))[0]
            for _ in range(4000)]
    assert np.quantile(taus, 0.95) == pytest.approx(stats.kendall_detectable(n, 0.05),
                                                    rel=0.08)
    us = [__import__("scipy").stats.mannwhitneyu(rng.normal(size=15), rng.normal(size=25))
          .statistic / (15 * 25) - 0.5 for _ in range(4000)]
    assert np.quantile(us, 0.95) == pytest.approx(stats.mann_whitney_detectable(15, 25, 0.05),
                                                  rel=0.08)
    with pytest.raises(ValueError, match="alpha"):
        stats.positive(e, alpha=1.5)
    with pytest.raises(TypeError, match=r"estimates\[0\]"):
        stats.positive(0.3, alpha=0.01)
    with pytest.raises(ValueError, match="n must be"):
        stats.kendall_detectable(1, 0.01)


# -- issue 25: degenerate evidence never confirms; exact() never executes text -----------------
def _degenerate():
    """Estimates with standard error 0, each from a way the library can produce one."""
    from eit.verdicts.fits import sample_slope

    return {
        "one sample": Estimate(1.0, 0.0, 1),
        "constant samples": mean([2.0] * 50),
        "median of tied data": stats.median([1.0] * 90 + list(np.linspace(2, 3, 10))),
        "frequency at p = 0": stats.frequency_estimate(proportion(3, 100), 0.0),
        "slope of an exact line": sample_slope([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]),
    }


@pytest.mark.parametrize("case", list(_degenerate()))
def test_degenerate_estimates_are_refused_by_every_check(case):
    e = _degenerate()[case]
    assert e.se == 0
    kw = dict(scope=PAPER)
    with pytest.raises(ValueError, match="estimate has standard error 0"):
        agree(*HEAD, theory=e.value, estimate=e, criterion=EXACT_LAW, **kw)
    with pytest.raises(ValueError, match=r"estimate\[1\] has standard error 0"):
        agree(*HEAD, theory=[1.0, e.value], estimate=[est(1.0, 0.01), e], criterion=APPROX,
              **kw)
    with pytest.raises(ValueError, match="estimate has standard error 0"):
        at_most(*HEAD, estimate=e, bound=e.value + 1, criterion=INEQ, **kw)
    with pytest.raises(ValueError, match="estimate has standard error 0"):
        at_least(*HEAD, estimate=e, bound=e.value - 1, criterion=INEQ, **kw)
    with pytest.raises(ValueError, match="larger has standard error 0"):
        order(*HEAD, larger=e, smaller=est(e.value - 1, 0.01), criterion=INEQ, **kw)
    with pytest.raises(ValueError, match=r"smaller\[0\] has standard error 0"):
        order(*HEAD, larger=[est(e.value + 1, 0.01)], smaller=[e], criterion=INEQ, **kw)
    with pytest.raises(ValueError, match=r"estimates\[0\]"):
        stats.significant_exceedances([e], [e.value - 1], side="above")
    with pytest.raises(ValueError, match=r"estimates\[0\]"):
        stats.positive(e, alpha=0.01)


def test_kind_exact_is_only_for_exact_values():
    with pytest.raises(ValueError, match="Monte Carlo"):
        agree(*HEAD, theory=1.0, estimate=est(1.0, 0.01), criterion=EXACT_LAW, scope=PAPER,
              kind="exact")
    with pytest.raises(ValueError, match="Monte Carlo"):
        at_most(*HEAD, estimate=est(1.0, 0.01), bound=2.0, criterion=INEQ, scope=PAPER,
                kind="exact")
    v = agree(*HEAD, theory=1.0, estimate=Estimate(1.0, 0.0, 1), criterion=EXACT_LAW,
              scope=PAPER, kind="exact")
    assert v.outcome == CONFIRMED and v.kind == "exact"
    v = agree(*HEAD, theory=1.0, estimate=Estimate(1.5, 0.0, 1), criterion=EXACT_LAW,
              scope=PAPER, kind="exact")
    assert v.outcome == REFUTED
    with pytest.raises(ValueError, match="kind='exact'"):
        bound(*HEAD, bound=0.1, failures=proportion(3, 100), criterion=INEQ, scope=PAPER,
              kind="exact")


def test_order_takes_an_exact_reference_with_the_old_zero_se_decision():
    change = [Estimate(v, 0.2, 32, df=31) for v in (0.1, 0.9, -0.9)]
    old_d = [c - Estimate(0.0, 0.0, 32) for c in change]    # what a zero-se reference gave
    for c, d in zip(change, old_d, strict=True):
        v = order(*HEAD, larger=c, smaller=Exact(0.0), criterion=INEQ, scope=PAPER)
        lo = d.value - d.critical(INEQ.alpha, sides=1) * d.se
        hi = d.value + d.critical(INEQ.alpha, sides=1) * d.se
        assert v.outcome == (CONFIRMED if lo > 0 else REFUTED if hi < 0 else INCONCLUSIVE)
        w = order(*HEAD, larger=Exact(0.0), smaller=-c, criterion=INEQ, scope=PAPER)
        assert w.outcome == v.outcome
    with pytest.raises(TypeError, match="both exact"):
        order(*HEAD, larger=Exact(1.0), smaller=Exact(0.0), criterion=INEQ, scope=PAPER)
    with pytest.raises(TypeError, match="Proportions"):
        order(*HEAD, larger=proportion(3, 10), smaller=Exact(0.0), criterion=INEQ, scope=PAPER)


@pytest.mark.parametrize("b", [-0.1, 1.5, -1e-300, 2.0])
def test_probability_bounds_outside_0_1_are_refused(b):
    with pytest.raises(ValueError, match="bound"):
        bound(*HEAD, bound=b, failures=proportion(3, 100), criterion=INEQ, scope=PAPER)
    with pytest.raises(ValueError, match=r"bound\[1\]"):
        bound(*HEAD, bound=[0.5, b], failures=[proportion(3, 100)] * 2, criterion=INEQ,
              scope=PAPER)


def test_hand_built_proportions_are_checked():
    from eit.verdicts.stats import Proportion

    with pytest.raises(ValueError, match="successes"):
        Proportion(5, 3)
    with pytest.raises(ValueError, match="trials"):
        Proportion(0, 0)
    with pytest.raises(ValueError, match="successes"):
        Proportion(-1, 3)
    with pytest.raises(TypeError, match="trials"):
        Proportion(1, 3.0)
    with pytest.raises(ValueError, match="lo"):
        Proportion(3, 10, 0.95, 0.0, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        Proportion(3, 10, 1.5)
    assert Proportion(3, 10) == proportion(3, 10)
    p = proportion(3, 10)
    assert Proportion(3, 10, 0.95, p.lo, p.hi) == p


def test_estimates_need_a_usable_t_law():
    with pytest.raises(ValueError, match="df"):
        Estimate(1.0, 0.1, 10, df=0.5)
    assert Estimate(1.0, 0.1, 10, df=1).critical(0.001) > 600


def test_exact_never_executes_text(tmp_path):
    target = tmp_path / "touched"
    attacks = [f'__import__("pathlib").Path("{target}").touch()',
               f"open('{target}', 'w')",
               "().__class__.__bases__[0].__subclasses__()",
               "(lambda: 1)()", "x.__class__", "Symbol('x')", "sqrt(x, evaluate=False)"]
    for text in attacks:
        with pytest.raises((ValueError, TypeError), match="printed"):
            exact(*HEAD, printed=text, derived=1, scope=PAPER, correction="c")
    assert not target.exists()


def test_exact_reads_plain_math_from_text():
    x = sp.Symbol("x")
    for text, derived in (("x**2/2", x**2 / 2), ("2^3", 8), ("sqrt(2)/2", 1 / sp.sqrt(2)),
                          ("exp(-2)", sp.exp(-2)), ("pi/4", sp.pi / 4), ("oo", sp.oo),
                          ("abs(-3)", 3), ("log(E)", 1)):
        assert exact(*HEAD, printed=text, derived=derived, scope=PAPER).outcome == CONFIRMED


def test_exact_handles_infinity():
    assert exact(*HEAD, printed=sp.oo, derived=sp.oo, scope=PAPER).outcome == CONFIRMED
    assert exact(*HEAD, printed=-sp.oo, derived=-sp.oo, scope=PAPER).outcome == CONFIRMED
    n = sp.Symbol("n", positive=True)
    assert exact(*HEAD, printed=sp.oo, derived=sp.limit(n, n, sp.oo),
                 scope=PAPER).outcome == CONFIRMED
    v = exact(*HEAD, printed=sp.oo, derived=-sp.oo, scope=PAPER, if_wrong=REFUTED)
    assert v.outcome == REFUTED
    for bad in (np.float32("inf"), np.float64("-inf"), float("inf")):
        with pytest.raises(ValueError, match="printed"):
            exact(*HEAD, printed=bad, derived=1, scope=PAPER)


def test_the_tightest_points_label_is_not_compared_across_seeds():
    """A one-sided check names its tightest point in ``theory`` (">= 0.5 at L = 5"); which
    point is tightest depends on the draws, so another seed may name another point."""
    from eit.verdicts.compare import compare_verdicts

    def rec(theory):
        return {"claim": "c", "theory": theory, "outcome": "confirmed",
                "test": {"statistic": "one-sided interval end"},
                "values": [{"name": n, "type": "exact", "value": 1} for n in ("L = 2", "L = 5")]}

    assert not compare_verdicts(rec(">= 0.5 at L = 5"), rec(">= 0.5 at L = 2")).problems
    assert compare_verdicts(rec(">= 0.5 at L = 5"), rec(">= 0.6 at L = 5")).problems
