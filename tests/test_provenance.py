"""Pre-registration against the cell that draws the data (eit.core.provenance, issue 24 item 4).

The cells run in an in-process IPython shell, as a chapter's do in its kernel: a check
refuses data whose generator drew before the criterion was declared, a missing ``drawn_by``,
and sources the book did not make; it accepts a generator made, or drawing, after the
criterion.
"""

from __future__ import annotations

import pytest

IPython = pytest.importorskip("IPython")

SETUP = """
import torch
from eit.core.seeds import generator, numpy_rng
from eit.core.provenance import measured
from eit.verdicts import Agreement, Detection, Inequality, agree, at_most
from eit.verdicts.checks import detects_positive
from eit.verdicts.stats import mean, proportion
from eit.verdicts.checks import bound
"""


@pytest.fixture()
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    assert sh.run_cell(SETUP).error_in_exec is None
    yield sh
    InteractiveShell.clear_instance()


def run(sh, *cells: str):
    """Run cells in order; return the error of the last one (None if it passed).

    Every cell before the last must pass: a setup cell that fails would make the last one
    fail for the wrong reason (a NameError instead of the refusal under test).
    """
    for code in cells[:-1]:
        res = sh.run_cell(code)
        assert res.error_in_exec is None, f"setup cell failed: {code!r}: {res.error_in_exec!r}"
    return sh.run_cell(cells[-1]).error_in_exec


#: 400 normals drawn by ``gen`` on its device (the device guard of ./book test refuses a CPU
#: draw with a generator on its simulated device)
DRAW_X = "x = torch.randn(400, generator=gen, device=gen.device, dtype=torch.float64)"

CHECK = ("agree('key', 'Lemma', 'E x = 0', theory=0.0, estimate=mean(x), criterion=crit, "
         "scope='paper'{})")


def test_a_generator_made_after_the_criterion_passes(shell):
    err = run(shell, "crit = Agreement(margin=0.5, exact_law=False)",
              "gen = generator(0); " + DRAW_X,
              "v = " + CHECK.format(", drawn_by=gen"))
    assert err is None
    assert shell.user_ns["v"].outcome == "confirmed"


def test_data_drawn_before_the_criterion_are_refused(shell):
    err = run(shell, "gen = generator(0); " + DRAW_X,
              "crit = Agreement(margin=0.5, exact_law=False)",
              CHECK.format(", drawn_by=gen"))
    assert isinstance(err, ValueError) and "drawn nothing since" in str(err)


def test_an_earlier_generator_that_draws_after_the_criterion_passes(shell):
    err = run(shell, "gen = generator(0); warm = torch.randn(3, generator=gen, device=gen.device)",
              "crit = Agreement(margin=0.5, exact_law=False)",
              DRAW_X,
              CHECK.format(", drawn_by=(gen,)"))
    assert err is None


def test_drawn_by_is_required_for_a_statistical_check_in_a_notebook(shell):
    err = run(shell, "crit = Agreement(margin=0.5, exact_law=False)",
              "gen = generator(0); " + DRAW_X,
              CHECK.format(""))
    assert isinstance(err, ValueError) and "drawn_by must name the sources" in str(err)


def test_a_generator_the_book_did_not_make_is_refused(shell):
    err = run(shell, "crit = Agreement(margin=0.5, exact_law=False)",
              "gen = torch.Generator().manual_seed(0)\n" + DRAW_X,
              CHECK.format(", drawn_by=gen"))
    assert isinstance(err, TypeError) and "drawn_by must be a generator of eit" in str(err)


def test_numpy_generators_counts_and_detections(shell):
    ok = run(shell, "crit = Inequality(alpha=0.01); det = Detection('one-sided t-test')",
             "rng = numpy_rng(1); k = int((rng.random(500) < 0.01).sum())\n"
             "gen = generator(2); y = torch.randn(300, generator=gen, device=gen.device,\n"
             "                    dtype=torch.float64) + 1",
             "v = bound('key', 'Lemma', 'P <= 0.2', bound=0.2, failures=proportion(k, 500), "
             "criterion=crit, scope='paper', drawn_by=rng)\n"
             "w = detects_positive('key', 'Fig', 'y > 0', mean(y), criterion=det, "
             "scope='paper', drawn_by=[gen])")
    assert ok is None
    err = run(shell, "rng2 = numpy_rng(3); k2 = int((rng2.random(500) < 0.01).sum())",
              "crit2 = Inequality(alpha=0.01)",
              "bound('key', 'Lemma', 'P <= 0.2', bound=0.2, failures=proportion(k2, 500), "
              "criterion=crit2, scope='paper', drawn_by=rng2)")
    assert isinstance(err, ValueError) and "drawn nothing since" in str(err)


def test_measured_tokens_and_stored_data_must_follow_the_criterion(shell):
    ok = run(shell, "crit = Inequality(alpha=0.01)",
             "t = measured('timings'); gen = generator(0)\n"
             "x = torch.rand(200, generator=gen, device=gen.device, dtype=torch.float64)",
             "v = at_most('key', 'T', 'E t <= 1', estimate=mean(x), bound=1.0, criterion=crit, "
             "scope='paper', drawn_by=t)")
    assert ok is None
    err = run(shell, "t2 = measured('timings')",
              "crit2 = Inequality(alpha=0.01)",
              "at_most('key', 'T', 'E t <= 1', estimate=mean(x), bound=1.0, criterion=crit2, "
              "scope='paper', drawn_by=t2)")
    assert isinstance(err, ValueError) and "before the criterion" in str(err)


def test_an_exact_comparison_needs_no_source(shell):
    err = run(shell, "from eit.verdicts.stats import Estimate\n"
              "crit = Agreement(margin=0.1)",
              "v = agree('key', 'Eq', 'x = 1', theory=1.0, estimate=Estimate(1.0, 0.0, 1), "
              "criterion=crit, scope='paper', kind='exact')")
    assert err is None


def test_outside_a_notebook_nothing_is_required():
    import torch

    from eit.core.seeds import generator
    from eit.verdicts import Agreement, agree
    from eit.verdicts.stats import mean

    crit = Agreement(margin=0.5, exact_law=False)
    gen = generator(0)
    x = torch.randn(400, generator=gen, device=gen.device, dtype=torch.float64)
    assert agree("key", "L", "E x = 0", theory=0.0, estimate=mean(x), criterion=crit,
                 scope="paper").outcome == "confirmed"
