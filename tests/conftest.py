"""Fixtures shared by the library's tests."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test drew, so that figure tests do not pile up open figures."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
