"""A pytest plugin: nbval with a statistical comparison of Monte Carlo results.

``pytest --nbval chapters/`` re-executes every chapter and compares each cell's outputs with
the committed ones. nbval compares text exactly; this plugin wraps its cell comparison so that
outputs carrying an eit record (verdicts, tables, criteria: see :mod:`eit.verdicts.records`)
are compared by their records instead, exact values exactly and estimates statistically
(:mod:`eit.verdicts.compare`). Every other output (printed text, SymPy results) is still
compared exactly by nbval. Figures are not compared (nbval's default).

The book loads it from its ``conftest.py`` (``pytest_plugins``); elsewhere use
``pytest -p eit.verdicts.nbval_plugin --nbval ...``. ``--eit-strict`` restores nbval's bitwise
comparison of every output, for the machine that executed the committed outputs. The end of
the run lists the cells that passed only thanks to the statistical tolerance.
"""

from __future__ import annotations

import pytest

_TOLERATED = "eit_tolerated"


def _has(name: str, value, *methods: str, attrs: tuple[str, ...] = ()) -> None:
    """Refuse an object that is not the pytest object a hook is given (by its interface)."""
    for m in methods:
        if not callable(getattr(value, m, None)):
            raise TypeError(f"{name} must be a pytest {name} (with a {m}() method), got "
                            f"{type(value).__name__}")
    for a in attrs:
        if not hasattr(value, a):
            raise TypeError(f"{name} must be a pytest {name} (with a {a!r} attribute), got "
                            f"{type(value).__name__}")


def pytest_addoption(parser):
    _has("parser", parser, "addoption")
    parser.addoption("--eit-strict", action="store_true", default=False,
                     help="compare every notebook output bitwise (nbval's own comparison)")


def pytest_configure(config):
    _has("config", config, "getoption")
    try:
        from nbval import plugin as nbval_plugin
    except ImportError:  # nbval not installed: nothing to wrap
        return
    if getattr(nbval_plugin.IPyNbCell, "_eit_wrapped", False):
        return
    original = nbval_plugin.IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        if self.config.getoption("--eit-strict"):
            return original(self, test, ref, skip_compare)
        from eit.verdicts.compare import compare_outputs as compare_eit
        from eit.verdicts.compare import is_eit_output

        where = f"cell {self.cell_num}"
        result = compare_eit(ref, test, where)
        plain_ok = original(self, [o for o in test if not is_eit_output(o)],
                            [o for o in ref if not is_eit_output(o)], skip_compare)
        if not result.ok:
            self.comparison_traceback = getattr(self, "comparison_traceback", []) or []
            self.comparison_traceback += ["statistical comparison of the eit records failed:",
                                          *result.problems]
            return False
        if result.tolerated:
            self.user_properties.append((_TOLERATED, (where, result.tolerated)))
        return plain_ok

    nbval_plugin.IPyNbCell.compare_outputs = compare_outputs
    nbval_plugin.IPyNbCell._eit_wrapped = True
    config._eit_tolerated = []


def pytest_runtest_logreport(report):
    _has("report", report, attrs=("when", "nodeid"))
    if report.when != "call":
        return
    props = getattr(report, "user_properties", None) or []
    if isinstance(props, (str, bytes)) or not isinstance(props, (list, tuple)):
        raise TypeError(f"report.user_properties must be a list of (name, value) pairs, got "
                        f"{type(props).__name__}")
    for key, value in props:
        if key == _TOLERATED:
            store = getattr(pytest, "_eit_tolerated", None)
            if store is None:
                store = pytest._eit_tolerated = []
            store.append((report.nodeid, value))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    _has("terminalreporter", terminalreporter, "section", "write_line")
    if isinstance(exitstatus, bool) or not isinstance(exitstatus, int):
        raise TypeError(f"exitstatus must be an int (pytest's exit code), got "
                        f"{type(exitstatus).__name__}")
    _has("config", config, "getoption")
    store = getattr(pytest, "_eit_tolerated", [])
    if not store:
        return
    terminalreporter.section("cells that passed only thanks to the statistical tolerance")
    for nodeid, (_where, lines) in store:
        terminalreporter.write_line(f"{nodeid}:")
        for line in lines[:8]:
            terminalreporter.write_line(f"    {line}")
        if len(lines) > 8:
            terminalreporter.write_line(f"    ... and {len(lines) - 8} more")
