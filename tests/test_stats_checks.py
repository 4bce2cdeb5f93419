"""Statistics and verdicts."""

import math

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from eit.exact import one_layer as exact
from eit.verdicts import checks, stats


def test_mean_and_se():
    e = stats.mean([1.0, 2.0, 3.0, 4.0])
    assert e.value == 2.5 and math.isclose(e.se, math.sqrt(5 / 3 / 4)) and e.n == 4
    assert str(stats.Estimate(1.23456, 0.0123, 10)) == "1.235 ± 0.012"


@given(st.integers(0, 50), st.integers(1, 50))
def test_clopper_pearson_contains_the_estimate(k, extra):
    n = k + extra
    p = stats.proportion(k, n)
    assert 0 <= p.lo <= p.value <= p.hi <= 1


def test_clopper_pearson_known_value():
    p = stats.proportion(0, 4000)
    assert math.isclose(p.hi, 1 - 0.025 ** (1 / 4000), rel_tol=1e-9)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: stats.mean([1.0]), "samples"),
    (lambda: stats.mean([[1.0, 2.0]]), "samples"),
    (lambda: stats.mean([1.0, float("inf")]), "samples"),
    (lambda: stats.proportion(5, 3), "successes"),
    (lambda: stats.proportion(1, 0), "trials"),
    (lambda: stats.proportion(1, 3, confidence=1.5), "confidence"),
    (lambda: checks.agree("p", "c", "s", theory=1.0, estimate=1.0), "estimate"),
    (lambda: checks.agree("", "c", "s", theory=1.0, estimate=stats.Estimate(1, 1, 2)), "paper"),
    (lambda: checks.agree_all("p", "c", "s", theory=[1], estimates=[]), "estimates"),
    (lambda: checks.bound("p", "c", "s", bound=[0.1], failures=[]), "failures"),
    (lambda: checks.exact("p", "c", "s", printed=1, derived=2, if_wrong="maybe"), "if_wrong"),
    (lambda: checks.holds("p", "c", "s", holds=1, evidence="e"), "holds"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_agree_verdicts():
    est = stats.Estimate(1.02, 0.01, 100)
    assert checks.agree("p", "c", "s", theory=1.0, estimate=est).verdict == checks.CONFIRMED
    assert checks.agree("p", "c", "s", theory=1.1, estimate=est).verdict == checks.REFUTED
    v = checks.agree("p", "c", "s", theory=1.1, estimate=est, corrected=1.0, correction="x")
    assert v.verdict == checks.CORRECTED
    bundle, meta = v._repr_mimebundle_()
    assert meta[checks.MIME]["verdict"] == checks.CORRECTED
    assert bundle["text/plain"].startswith("✎ [confirmed with a correction]")


def test_bound_and_exact_verdicts():
    assert checks.bound("p", "c", "s", bound=0.01,
                        failures=stats.proportion(50, 100)).verdict == checks.REFUTED
    assert checks.bound("p", "c", "s", bound=0.6,
                        failures=stats.proportion(50, 100)).verdict == checks.CONFIRMED
    lam = sp.Symbol("lambda")
    assert checks.exact("p", "c", "s", printed=(lam + 1) ** 2,
                        derived=lam**2 + 2 * lam + 1).verdict == checks.CONFIRMED
    assert checks.exact("p", "c", "s", printed=lam, derived=2 * lam,
                        correction="factor 2").verdict == checks.CORRECTED


def test_exact_law_of_one_relu_layer():
    # E||v||^2/||u||^2 = 1 and Var = 5/m from the exact law (2/m) chi2_K, K ~ Bin(m, 1/2)
    import numpy as np
    from scipy import stats as sst
    m = 50
    k = np.arange(m + 1)
    w = sst.binom.pmf(k, m, 0.5)
    mean = np.dot(w, 2 / m * k)
    second = np.dot(w, (2 / m) ** 2 * (2 * k + k**2))
    assert math.isclose(mean, 1.0) and math.isclose(second - mean**2, 5 / m)
    assert 0 < exact.relu_layer_tail(m, 0.3) < 1
    assert exact.relu_layer_tail(m, 5.0) < 1e-12
    q = exact.relu_layer_distortion_quantile(m, 0.5)
    assert 0 < q < 1


def test_holds_correction_needs_its_own_evidence():
    ok = checks.holds("p", "c", "s", holds=True, evidence="e")
    assert ok.verdict == checks.CONFIRMED
    fixed = checks.holds("p", "c", "s", holds=False, evidence="e", if_wrong=checks.CORRECTED,
                         correction="the corrected claim", corrected=True)
    assert fixed.verdict == checks.CORRECTED and fixed.correction == "the corrected claim"
    unsupported = checks.holds("p", "c", "s", holds=False, evidence="e",
                               if_wrong=checks.CORRECTED, correction="x", corrected=False)
    assert unsupported.verdict == checks.REFUTED
    with pytest.raises(TypeError, match="corrected"):
        checks.holds("p", "c", "s", holds=False, evidence="e", if_wrong=checks.CORRECTED,
                     correction="x")
    with pytest.raises(ValueError, match="corrected"):
        checks.holds("p", "c", "s", holds=False, evidence="e", corrected=True)
    with pytest.raises(ValueError, match="correction"):
        checks.holds("p", "c", "s", holds=False, evidence="e", if_wrong=checks.CORRECTED,
                     corrected=True)
