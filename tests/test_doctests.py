"""Every docstring Example of the library runs (doctest), imported as the installed ``eit``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import eit

MODULES = sorted(m.name for m in pkgutil.walk_packages(eit.__path__, prefix="eit."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.delenv("EIT_SEED", raising=False)
    # A doctest is documentation, not a device check: its printed tensors are the host's
    # (``tensor([...])``), so it runs on the CPU, also under the device guard (EIT_GUARD=1)
    # and on a GPU; the library's device discipline is checked by the other tests.
    monkeypatch.setenv("EIT_DEVICE", "cpu")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
