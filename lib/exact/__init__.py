"""Exact laws: the exact engines, moment recursions, one-layer laws, Weingarten calculus.

* :mod:`~eit.exact.engine`: :func:`trace`, the same layer descriptions as
  :func:`eit.sample.trace` sampled without weight matrices (the conditional Gaussian law of
  every dense layer, the norm chain), returning the same :class:`~eit.sample.traces.Trace`;
* :mod:`~eit.exact.chains`: :func:`norm_chain` and :func:`gram_chain` by name;
* :mod:`~eit.exact.moments`: Hanin & Rolnick's moment recursions and length chains;
* :mod:`~eit.exact.one_layer`: the exact one-layer laws of Arpit & Bengio;
* :mod:`~eit.exact.weingarten`: orthogonal Weingarten calculus;
* :mod:`~eit.exact.symbolic`: SymPy helpers (Gaussian expectations, Chernoff bounds);
* :mod:`~eit.exact.length_laws`, :mod:`~eit.exact.unit_moments`: closed forms for the
  moments of the squared length and one unit's symbolic moments (Hanin & Rolnick);
* :mod:`~eit.exact.arccos`, :mod:`~eit.exact.ratio_profiles`, :mod:`~eit.exact.layer_products`:
  the arc-cosine kernel, exact ratio profiles and running products of per-layer laws;
* :mod:`~eit.exact.isometry_symbolic`: SymPy forms of the isometry gap and of BN.

The submodules keep their names (``from eit.exact import moments as fm``); the functions are
re-exported here under their own names.
"""

from . import chains, engine, moments, one_layer, symbolic, weingarten
from .chains import gaussian_relu_mlp, gram_chain, norm_chain
from .engine import METHODS, NoExactLaw, chi2, log_chi2, trace
from .moments import (
    KERAS_TRUNCATION_STD,
    Moments,
    cross_moment,
    empirical_variance,
    expect_independent,
    expected_empirical_variance,
    gaussian_bias_length_chain,
    moment_recursion,
    moments_of,
    named_initializers,
    relu_mlp_lengths,
    relu_residual_chain,
)
from .one_layer import (
    relu_layer_distortion_quantile,
    relu_layer_mean_distortion,
    relu_layer_sq_ratio_cdf,
    relu_layer_tail,
)
from .symbolic import (
    chernoff_exponent,
    gaussian_expectation,
    half_gaussian_square_mgf,
    masked_square_mgf,
    relu_moment,
    relu_square_mgf,
    stationary_points,
    std_normal_pdf,
)
from .weingarten import (
    coset_type,
    gram_matrix,
    haar_moment,
    haar_monomial_samples,
    loop_lengths,
    loops,
    monomial_samples,
    pair_partitions,
    weingarten_coset,
    weingarten_matrix,
    weingarten_o,
)

__all__ = [
    "KERAS_TRUNCATION_STD", "METHODS", "Moments", "NoExactLaw", "chains", "chernoff_exponent",
    "chi2", "coset_type", "cross_moment", "empirical_variance", "engine", "expect_independent",
    "expected_empirical_variance", "gaussian_bias_length_chain", "gaussian_expectation",
    "gaussian_relu_mlp", "gram_chain", "gram_matrix",
    "half_gaussian_square_mgf", "haar_moment", "haar_monomial_samples", "log_chi2",
    "loop_lengths", "loops", "masked_square_mgf", "moment_recursion", "moments", "moments_of",
    "monomial_samples", "named_initializers", "norm_chain", "one_layer", "pair_partitions",
    "relu_layer_distortion_quantile", "relu_layer_mean_distortion", "relu_layer_sq_ratio_cdf",
    "relu_layer_tail", "relu_mlp_lengths", "relu_moment", "relu_residual_chain",
    "relu_square_mgf", "stationary_points", "std_normal_pdf", "symbolic", "trace",
    "weingarten", "weingarten_coset", "weingarten_matrix", "weingarten_o",
]
