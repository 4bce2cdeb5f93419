"""The NumPy length chain samples the exact law of the moment recursion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eit.core import device  # noqa: F401  (imported before seeds: see core.device)
from eit.core.seeds import numpy_rng
from eit.exact import moments as fm
from eit.exact.length_chain import bias_length_chain


@pytest.mark.parametrize("nu2", [0.0, 0.3])
def test_moments_match_the_exact_recursion(nu2):
    widths = [3, 5, 2, 8]
    n = 400_000
    out = bias_length_chain(widths, n_nets=n, rng=numpy_rng(1), nu2=nu2)
    mom = fm.moment_recursion([1] + widths, 1, 1, nu2=nu2, nu4=3 * nu2**2)
    for j in range(1, len(widths) + 1):
        m = out[j]
        for k, exact in ((1, float(mom.mean[j])), (2, float(mom.second[j]))):
            x = m**k
            assert abs(x.mean() - exact) < 5 * x.std() / math.sqrt(n)


def test_keep_and_bad_arguments():
    out = bias_length_chain([2, 2, 2], n_nets=5, rng=numpy_rng(0), keep=[0, 3])
    assert sorted(out) == [0, 3] and np.all(out[0] == 1.0)
    with pytest.raises(ValueError, match="nu2"):
        bias_length_chain([2, 2], n_nets=5, rng=numpy_rng(0), nu2=[1.0])
    with pytest.raises(ValueError, match="keep"):
        bias_length_chain([2, 2], n_nets=5, rng=numpy_rng(0), keep=[3])
    with pytest.raises(TypeError, match="rng"):
        bias_length_chain([2, 2], n_nets=5, rng=0)
