"""The re-run agreement of verdicts (eit.verdicts.stability, issue 24 item 1).

Validated by simulation: pairs of independent runs of a check, with true effects spread over
a range that covers every decision threshold, give an observed rate of equal outcomes that
matches the mean predicted probability, overall and among the runs predicted stable. Every
kind of statistical record is simulated through the real check: estimates against a band or
a bound, counted failures against a probability bound (Clopper-Pearson), two proportions in
order (Fisher's exact test), and detections by a one-sided t-test, Kendall's tau and the
Mann-Whitney U test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as st

from eit.verdicts import (
    Agreement,
    Detection,
    Estimate,
    Inequality,
    agree,
    at_least,
    bound,
    detects,
    ledger,
    order,
)
from eit.verdicts.checks import detects_positive
from eit.verdicts.stability import STABLE, of_record
from eit.verdicts.stats import (
    Proportion,
    Statistic,
    kendall_detectable,
    kendall_tau,
    mann_whitney,
    mann_whitney_detectable,
    mean,
)

N_PAIRS = 3000


def _record(verdict) -> dict:
    return json.loads(json.dumps(verdict.record()))


def _pairs(draw, run, seed: int, n_pairs: int = N_PAIRS):
    """(predicted probabilities, observed agreements) of ``n_pairs`` pairs of runs: a true
    effect ``draw(rng)``, then two independent runs ``run(rng, truth)`` of the check."""
    rng = np.random.default_rng(seed)
    predicted, same = [], []
    for _ in range(n_pairs):
        truth = draw(rng)
        first, second = run(rng, truth), run(rng, truth)
        rec = _record(first)
        s = of_record(rec)
        assert s is not None and 0 <= s.probability <= 1
        predicted.append(s.probability)
        same.append(rec["outcome"] == second.outcome)
    return np.array(predicted), np.array(same, dtype=float)


def _simulate(check, low: float, high: float, se: float, seed: int):
    """Pairs of runs of ``check`` on estimates with standard error ``se``, true means spread
    uniformly over [low, high]."""
    return _pairs(lambda rng: rng.uniform(low, high),
                  lambda rng, mu: check(Estimate(float(rng.normal(mu, se)), se, 10_000)), seed)


def _agrees_on_average(predicted, same) -> None:
    se = math.sqrt(same.mean() * (1 - same.mean()) / len(same))
    assert abs(predicted.mean() - same.mean()) < 4 * se + 0.01, (predicted.mean(), same.mean())


def _calibrated(predicted, same) -> None:
    """Mean prediction = observed rate, overall and among the stable predictions."""
    _agrees_on_average(predicted, same)
    stable = predicted >= STABLE
    assert stable.sum() > 300
    observed = same[stable].mean()
    floor = STABLE - 4 * math.sqrt(STABLE * (1 - STABLE) / stable.sum())
    assert observed >= floor, (observed, floor, stable.sum())
    shaky = predicted < 0.8
    assert shaky.sum() > 100 and same[shaky].mean() < 0.85   # the measure is not vacuous


def test_band_agreement_predicts_the_rerun():
    crit = Agreement(margin=1.0, alpha=0.01, exact_law=False)

    def check(e):
        return agree("key", "c", "s", theory=0.0, estimate=e, criterion=crit, scope="paper")

    _calibrated(*_simulate(check, -2.5, 2.5, 0.2, seed=1))


def test_one_sided_bound_predicts_the_rerun():
    crit = Inequality(alpha=0.01)

    def check(e):
        return at_least("key", "c", "s", estimate=e, bound=0.0, criterion=crit,
                        scope="paper")

    _calibrated(*_simulate(check, -1.5, 1.5, 0.2, seed=2))


def test_one_threshold_at_d_standard_errors():
    """One point at distance d from one threshold: Phi(d / sqrt 2); 0.99 at d = 3.29."""
    crit = Inequality(alpha=0.01)
    c = 2.3263478740408408                         # z at 0.99, one-sided
    for d, expected in ((3.29, 0.99), (0.0, 0.5), (6.0, 0.99999)):
        e = Estimate(c * 0.1 + d * 0.1, 0.1, 10**6)
        s = of_record(_record(at_least("key", "c", "s", estimate=e, bound=0.0,
                                       criterion=crit, scope="paper")))
        assert s.distance == pytest.approx(d, abs=1e-9)
        assert s.probability == pytest.approx(expected, abs=5e-3 if d else 1e-9)


def test_exact_law_confirmation_is_as_stable_as_its_coverage():
    """A confirmed exact law asserts mu = theory; re-runs then confirm at the coverage."""
    crit = Agreement(margin=0.1, relative=True, alpha=0.05, exact_law=True)
    rng = np.random.default_rng(3)

    def run():
        return agree("key", "c", "s", theory=[1.0] * 4, criterion=crit, scope="paper",
                     estimate=[Estimate(float(x), 0.01, 10_000)
                               for x in rng.normal(1.0, 0.01, 4)])

    first = [run() for _ in range(N_PAIRS)]
    confirmed = [v for v in first if v.outcome == "confirmed"]
    predicted = [of_record(_record(v)).probability for v in confirmed]
    assert predicted == pytest.approx([(1 - 0.05 / 4) ** 4] * len(confirmed))
    again = np.mean([run().outcome == "confirmed" for _ in confirmed])
    se = math.sqrt(0.95 * 0.05 / len(confirmed))
    assert abs(again - (1 - 0.05 / 4) ** 4) < 4 * se


def test_exact_law_near_its_margin_predicts_the_rerun():
    """An exact law whose interval is about as wide as its margin: whether a re-run confirms
    it or calls it too wide depends on the re-run's own standard error, which the model
    varies (log-ratio sd ``1/sqrt(df)``): on true spreads around the one that fills the
    margin, predicted and observed agreement match (the earlier model, which took the
    half-width as fixed, predicted 0.86 where 0.48 was observed at a single spread)."""
    n, margin = 50, 0.29                       # half-width t_49 sigma / sqrt(50): 0.284 sigma
    crit = Agreement(margin=margin, alpha=0.05, exact_law=True)

    def run(rng, sigma):
        x = rng.normal(1.0, sigma, n)
        return agree("key", "c", "s", theory=1.0, criterion=crit, scope="paper",
                     estimate=Estimate(float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)),
                                       n, df=n - 1))

    predicted, same = _pairs(lambda rng: rng.uniform(0.6, 1.4), run, seed=11)
    _agrees_on_average(predicted, same)
    shaky = predicted < 0.8
    assert shaky.sum() > 300 and same[shaky].mean() < 0.8   # margin-decided runs exist


def test_skew_moves_the_t_intervals_error_to_one_tail():
    """The design notes' reading of the seed-5 flips: skewed samples (Gamma, skewness 0.6,
    n = 100; 400,000 studentized means) keep the two-sided level of a t-interval near its
    nominal value and move the error into the left tail as the first Edgeworth term
    ``gamma (2 z^2 + 1) phi(z) / (6 sqrt n)`` predicts."""
    rng = np.random.default_rng(1)
    n, reps, shape, tail = 100, 400_000, 11.0, 1e-3
    c = st.t.isf(tail, n - 1)
    low = high = 0
    for _ in range(8):
        x = rng.gamma(shape, size=(reps // 8, n))
        t = (x.mean(1) - shape) / (x.std(1, ddof=1) / math.sqrt(n))
        low, high = low + int((t < -c).sum()), high + int((t > c).sum())
    z = st.norm.isf(tail)
    shift = 2 / math.sqrt(shape) / (6 * math.sqrt(n)) * (2 * z * z + 1) * st.norm.pdf(z)
    se = math.sqrt(2 * tail / reps)
    assert abs((low + high) / reps - 2 * tail) < 0.2 * 2 * tail        # 0.0023 vs 0.002
    assert abs(low / reps - (tail + shift)) < 0.15 * (tail + shift)     # 0.0019 vs 0.0017
    assert high / reps < tail - shift / 2 and low / reps > tail + shift / 2 + 4 * se


def test_counted_failures_predict_the_rerun():
    """bound(): two points of 200 trials against P <= 0.1 (counts binomial, true failure
    probabilities uniform on [0, 0.3]: confirmed, inconclusive and refuted)."""
    crit, n = Inequality(alpha=0.01), 200

    def run(rng, ps):
        return bound("key", "c", "s", bound=[0.1, 0.1], criterion=crit, scope="paper",
                     failures=[Proportion(int(rng.binomial(n, p)), n) for p in ps])

    _calibrated(*_pairs(lambda rng: rng.uniform(0.0, 0.3, 2), run, seed=4))


def test_proportions_in_order_predict_the_rerun():
    """order() of two proportions (Fisher's exact test), 80 and 60 trials."""
    crit, nx, ny = Inequality(alpha=0.01), 80, 60

    def draw(rng):
        py = rng.uniform(0.05, 0.5)
        return float(np.clip(py + rng.uniform(-0.3, 0.8), 0.0, 1.0)), py

    def run(rng, ps):
        return order("key", "c", "s", criterion=crit, scope="paper",
                     larger=Proportion(int(rng.binomial(nx, ps[0])), nx),
                     smaller=Proportion(int(rng.binomial(ny, ps[1])), ny))

    _calibrated(*_pairs(draw, run, seed=5, n_pairs=2000))


def test_t_test_detection_predicts_the_rerun():
    """detects_positive(): a one-sided t-test of the mean of 50 normal samples (df 49),
    noncentrality uniform on [-1, 10]."""
    crit, m = Detection("one-sided t-test", alpha=0.01), 50

    def run(rng, mu):
        return detects_positive("key", "c", "s", mean(rng.normal(mu, 1.0, m)), criterion=crit,
                                scope="paper")

    _calibrated(*_pairs(lambda rng: rng.uniform(-1.0, 10.0) / math.sqrt(m), run, seed=6))


def test_rank_detections_predict_the_rerun():
    """detects() of a one-sided Kendall tau (40 pairs, a linear trend in noise) and of a
    one-sided Mann-Whitney U test (30 against 30 normal samples, shifted)."""
    crit, m = Detection("Kendall tau_b, one-sided", alpha=0.01), 40
    x = np.arange(m, dtype=float)

    def kendall(rng, slope):
        tau, p_two = kendall_tau(x, slope * x + rng.normal(0.0, 1.0, m))
        p = p_two / 2 if tau.value > 0 else 1 - p_two / 2
        return detects("key", "c", "s", statistic=tau, p_value=p, criterion=crit,
                       scope="paper", detectable=kendall_detectable(m, crit.alpha))

    mw_crit, k = Detection("Mann-Whitney U, one-sided", alpha=0.01), 30

    def mann(rng, shift):
        u, p = mann_whitney(rng.normal(shift, 1.0, k), rng.normal(0.0, 1.0, k))
        return detects("key", "c", "s", statistic=u, p_value=p, criterion=mw_crit,
                       scope="paper", detectable=mann_whitney_detectable(k, k, mw_crit.alpha))

    runs = [_pairs(lambda rng: rng.uniform(-0.01, 0.15), kendall, seed=7, n_pairs=1500),
            _pairs(lambda rng: rng.uniform(-0.2, 2.5), mann, seed=8, n_pairs=1500)]
    for predicted, same in runs:
        _agrees_on_average(predicted, same)
    _calibrated(*(np.concatenate(z) for z in zip(*runs, strict=True)))


def test_detection_at_and_beyond_the_level():
    """Phi((z - z_a) / sqrt 2): 1/2 at p = alpha, 0.99 at z = z_a + 3.29; p = 0 is certain."""
    def rec(p):
        return _record(detects("key", "c", "s", statistic=Statistic(1.0), p_value=p,
                               criterion=Detection("one-sided t-test", alpha=0.001),
                               scope="paper", detectable=0.5))

    s = of_record(rec(0.001 * (1 - 1e-12)))
    assert s.distance == pytest.approx(0.0, abs=1e-9)
    assert s.probability == pytest.approx(0.5, abs=1e-9)
    s = of_record(rec(float(st.norm.sf(st.norm.isf(0.001) + 3.29))))
    assert s.stable and s.probability == pytest.approx(0.99, abs=5e-4)
    assert s.distance == pytest.approx(3.29, abs=1e-9)
    assert of_record(rec(1e-127)).probability == 1.0
    for p in (0.0, 1.0):                       # confirmed, inconclusive: certainly again
        s = of_record(rec(p))
        assert s.probability == 1.0 and s.distance == math.inf
    assert 0.5 < of_record(rec(0.002)).probability < 0.99     # inconclusive near the level


def _rerun_law(k: int, n: int) -> np.ndarray:
    return st.betabinom.pmf(np.arange(n + 1), n, k + 0.5, n - k + 0.5)


def test_count_probabilities_are_sums_over_the_checks_outcomes():
    """For counts, of_record is exact: P(same outcome) equals the sum of the re-run count law
    over the counts for which the real check (bound(), order()) gives the recorded outcome."""
    crit = Inequality(alpha=0.05)
    n = 30
    for b in (0.1, 0.4):
        def run(k, b=b):
            return bound("key", "c", "s", bound=[b, b], criterion=crit, scope="paper",
                         failures=[Proportion(k[0], n), Proportion(k[1], n)])
        single = [bound("key", "c", "s", bound=b, failures=Proportion(j, n),
                        criterion=Inequality(alpha=0.025), scope="paper").outcome
                  for j in range(n + 1)]
        for k in ((0, 0), (1, 3), (3, 6), (5, 9), (12, 12), (2, 20)):
            v = run(k)
            if v.kind != "test":
                continue
            # the points are independent: P(outcome) from the per-point outcomes at
            # alpha / 2 (the check's own per-point level)
            la, lb = _rerun_law(k[0], n), _rerun_law(k[1], n)
            joint = np.outer(la, lb)
            same = np.array([[_combine(single[i], single[j]) == v.outcome
                              for j in range(n + 1)] for i in range(n + 1)])
            assert of_record(_record(v)).probability == pytest.approx(
                float(joint[same].sum()), abs=1e-12), (b, k, v.outcome)
    nx, ny = 12, 9
    outcomes = {(i, j): order("key", "c", "s", larger=Proportion(i, nx),
                              smaller=Proportion(j, ny), criterion=crit, scope="paper").outcome
                for i in range(nx + 1) for j in range(ny + 1)}
    assert len(set(outcomes.values())) == 3
    for k in ((0, 0), (6, 1), (9, 2), (12, 0), (2, 6), (5, 5)):
        v = order("key", "c", "s", larger=Proportion(k[0], nx), smaller=Proportion(k[1], ny),
                  criterion=crit, scope="paper")
        joint = np.outer(_rerun_law(*(k[0], nx)), _rerun_law(*(k[1], ny)))
        want = sum(joint[i, j] for (i, j), o in outcomes.items() if o == v.outcome)
        assert of_record(_record(v)).probability == pytest.approx(want, abs=1e-12), k


def test_malformed_count_and_p_value_records_are_refused():
    """A stored count, bound or p-value that no check writes is an error naming the field,
    never read as a stable or unstable decision."""
    crit = Inequality(alpha=0.01)
    rec = _record(bound("key", "c", "s", bound=0.1, failures=Proportion(3, 100),
                        criterion=crit, scope="paper"))
    for change, error in (({"k": math.nan}, TypeError), ({"k": True}, TypeError),
                          ({"k": 101}, ValueError), ({"n": 0}, ValueError),
                          ({"bound": math.nan}, ValueError), ({"bound": 1.5}, ValueError),
                          ({"bound": "0.1"}, TypeError)):
        bad = {**rec, "values": [{**rec["values"][0], **change}]}
        with pytest.raises(error, match="record"):
            of_record(bad)
    rec = _record(order("key", "c", "s", larger=Proportion(30, 100),
                        smaller=Proportion(10, 100), criterion=crit, scope="paper"))
    bad = {**rec, "values": [{**rec["values"][0], "k": -1}, rec["values"][1]]}
    with pytest.raises(ValueError, match="record"):
        of_record(bad)
    det = _record(detects("key", "c", "s", statistic=Statistic(1.0), p_value=1e-5,
                          criterion=Detection("t", alpha=0.01), scope="paper"))
    for p, error in ((math.nan, ValueError), (1.5, ValueError), (None, TypeError)):
        with pytest.raises(error, match="record"):
            of_record({**det, "test": {**det["test"], "p": p}})


def _combine(a: str, b: str) -> str:
    """The outcome of bound() from its two points' outcomes."""
    if "refuted" in (a, b):
        return "refuted"
    return "confirmed" if a == b == "confirmed" else "inconclusive"


def test_records_that_nothing_random_decides_have_no_stability():
    assert of_record({"kind": "exact", "outcome": "confirmed"}) is None
    assert of_record({"kind": "consistency", "outcome": "confirmed", "test": {}}) is None
    crit = Inequality(alpha=0.01)
    for b in (1.0, 0.9):          # a bound >= 1, and one cleared by more than 100x
        v = bound("key", "c", "s", bound=b, failures=Proportion(0, 100_000), criterion=crit,
                  scope="paper")
        assert v.kind == "consistency" and of_record(_record(v)) is None


#: Records whose statistic lies too close to a threshold of their criterion (re-run agreement
#: below 0.99), found when stability entered the protocol: each needs more samples or a
#: pre-registered margin, and is shown as unstable on the status page. A record that becomes
#: unstable and is not listed here fails the test; a listed one that became stable must leave
#: the list.
KNOWN_UNSTABLE: set[tuple[str, str]] = set()
# (empty since the benchmark's target (b), whose 10% tolerance lies inside the spread of the
# machine's state between runs, became an estimate with its interval, not a decision)


def test_every_statistical_record_is_stable():
    unstable = set()
    lines = []
    for r in ledger.verdicts():
        s = of_record(r)
        assert (s is None) == (r.get("kind") != "test"), (r["chapter"], r["claim"])
        if s is not None and not s.stable:
            key = (r["chapter"].removeprefix("chapters/"), r["claim"])
            unstable.add(key)
            lines.append(f"{key}: {r['outcome']}, re-run agreement {s.probability:.3f}, "
                         f"{s.distance:.2f} se from a threshold at {s.point}")
    new = unstable - KNOWN_UNSTABLE
    assert not new, "unstable records:\n" + "\n".join(
        ln for ln in lines if any(str(k) in ln for k in new))
    fixed = KNOWN_UNSTABLE - unstable
    assert not fixed, f"now stable, remove from KNOWN_UNSTABLE: {sorted(fixed)}"
