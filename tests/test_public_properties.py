"""Every public function of ``eit`` under bad input (issue 25): non-finite, wrong-typed,
sentinel, degenerate, extreme-scale and wrong-shaped arguments, drawn by Hypothesis.

The harness and the contract are in ``tests/properties/harness.py``; the specs, one module per
subpackage, in ``tests/properties/spec_*.py``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eit
from properties.harness import check_valid, run_property, unlisted

ROOT = Path(__file__).resolve().parents[1]


def _spec_modules() -> dict[str, list]:
    """Spec module name (``spec_core``...) -> its specs."""
    return {path.stem: importlib.import_module(f"properties.{path.stem}").SPECS
            for path in sorted((ROOT / "tests" / "properties").glob("spec_*.py"))}


SPEC_MODULES = _spec_modules()
SPECS = [spec for specs in SPEC_MODULES.values() for spec in specs]


def public_functions() -> set[str]:
    """The public functions of ``eit``, as the API reference lists them."""
    if str(ROOT / "_ext") not in sys.path:
        sys.path.insert(0, str(ROOT / "_ext"))
    from eit_api import own_names

    out = set()
    for info in pkgutil.walk_packages(eit.__path__, "eit."):
        if info.name.rpartition(".")[2].startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(info.name)
        out |= {f"{info.name}.{name}" for name in own_names(module)
                if inspect.isfunction(getattr(module, name))}
    return out


def test_every_public_function_has_a_spec():
    names = [spec.name for spec in SPECS]
    assert len(names) == len(set(names)), "a function has two specs"
    missing = sorted(public_functions() - set(names))
    assert not missing, f"{len(missing)} public functions without a property spec: {missing}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_spec_names_every_parameter(spec):
    assert not unlisted(spec), f"{spec.name}: parameters with no kind: {unlisted(spec)}"
    assert set(spec.make()) >= set(spec.kinds), f"{spec.name}: make() lacks a mutated argument"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_valid_call_works(spec):
    check_valid(spec)


def _bad_input_test(specs: list):
    """The property test of one spec module's (function, argument) cases.

    One test function per spec module, not one for all: Hypothesis's pytest plugin wraps a
    parametrized test's settings once per case (a parent chain that grows with the number of
    cases), and past about 900 cases reading them exceeds Python's recursion limit.
    """
    cases = [(spec, arg) for spec in specs for arg in spec.kinds]

    @pytest.mark.parametrize(("spec", "arg"), cases, ids=[f"{s.name}:{a}" for s, a in cases])
    @settings(max_examples=3, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def test(spec, arg, data):
        """Bad input is refused by name, or carried honestly (see properties/harness.py)."""
        run_property(spec, arg, data)

    return test


for _module, _specs_of in SPEC_MODULES.items():
    globals()[f"test_bad_input_{_module.removeprefix('spec_')}"] = _bad_input_test(_specs_of)
