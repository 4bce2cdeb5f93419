"""Fixtures shared by the library's tests."""

from __future__ import annotations

import os

import matplotlib
import pytest

matplotlib.use("Agg")

if os.environ.get("EIT_GUARD") == "1":
    # the simulated device exists before the first backward pass of this process (autograd
    # sizes its per-device queues once); the guard itself switches on with EIT_DEVICE=sim
    from eit.core import guard

    guard.register()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cpu_only(reason): the test measures CPU-only internals (for example the "
        "chunked CPU streams of eit.sample.laws); skipped under the device guard (EIT_GUARD=1)")


def pytest_collection_modifyitems(config, items):
    """Under ``EIT_GUARD=1`` skip the tests marked ``cpu_only``, giving their reason."""
    import os

    if os.environ.get("EIT_GUARD") != "1":
        return
    for item in items:
        mark = item.get_closest_marker("cpu_only")
        if mark is not None:
            why = mark.kwargs.get("reason") or (mark.args[0] if mark.args else "CPU only")
            item.add_marker(pytest.mark.skip(reason=f"cpu_only under the device guard: {why}"))


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test drew, so that figure tests do not pile up open figures."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(autouse=True)
def _guarded_device(monkeypatch):
    """Under ``EIT_GUARD=1`` (``./book test``) every library test computes on the simulated
    device of :mod:`eit.core.guard`, which fails where CUDA would on mixed devices; the
    chapters' smoke runs (their kernels inherit the environment) run on it too."""
    import os

    if os.environ.get("EIT_GUARD") == "1":
        monkeypatch.setenv("EIT_DEVICE", "sim")
    yield
