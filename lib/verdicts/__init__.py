"""Verdicts: estimates and their arithmetic, pre-registered criteria, checks, records, ledger.

The protocol (DESIGN.md section 3a): every claim gets one :class:`~.records.Verdict` with an
outcome (confirmed, confirmed with a correction, refuted, inconclusive, or "not reproduced on
the substitute"), a scope (the paper's claim, a substitute setting, the book's extension) and a
kind (a statistical test, an exact computation, or a consistency check), decided by a
criterion declared before the measurement (:mod:`~.criteria`).

Estimators live in :mod:`~.stats` (means, proportions, paired differences, rank tests,
estimates rebuilt from stored summaries); the measured quantities that several chapters share
have their own modules: :mod:`~.norm_ratios` (mean squared norm ratios and profiles),
:mod:`~.length_moments` (moments of lengths from log-lengths), :mod:`~.tails` (certified
tail thresholds, envelopes) and :mod:`~.fits` (slopes with their standard errors).
"""

from . import checks, criteria, records, stats
from .checks import (
    agree,
    at_least,
    at_most,
    bound,
    consistency,
    detects,
    exact,
    holds,
    order,
)
from .criteria import Agreement, Detection, Inequality
from .records import (
    CONFIRMED,
    CONSISTENCY,
    CORRECTED,
    EXACT,
    EXTENSION,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PAPER,
    REFUTED,
    SUBSTITUTE,
    TEST,
    Exact,
    Table,
    Verdict,
)
from .stats import (
    Estimate,
    Proportion,
    Statistic,
    fisher_exact,
    kendall_tau,
    log_mean,
    mean,
    mean_se,
    median,
    proportion,
)

__all__ = ["checks", "criteria", "records", "stats", "agree", "at_least", "at_most", "bound",
           "consistency", "detects", "exact", "holds", "order", "Agreement", "Detection",
           "Inequality", "CONFIRMED", "CONSISTENCY", "CORRECTED", "EXACT", "EXTENSION",
           "INCONCLUSIVE", "NOT_REPRODUCED", "PAPER", "REFUTED", "SUBSTITUTE", "TEST", "Exact",
           "Table", "Verdict", "Estimate", "Proportion", "Statistic", "fisher_exact",
           "kendall_tau", "log_mean", "mean", "mean_se", "median", "proportion"]
