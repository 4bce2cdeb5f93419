"""Sampling random networks: weight laws, layer descriptions, the explicit engine.

* :mod:`~eit.sample.laws`: weight laws (Gaussian, uniform, truncated, Haar, sphere rows,
  weight-normalized rows, named schemes) as described :class:`~eit.sample.laws.Law` objects;
* :mod:`~eit.sample.layers`: the layer descriptions (``Dense``, ``WeightNorm``, ``Conv``,
  ``BatchNorm``, activations, ``Residual``, ``Serial``);
* :mod:`~eit.sample.engine`: the batched explicit pass, :func:`trace`, returning a
  :class:`~eit.sample.traces.Trace` (the exact engines are in :mod:`eit.exact`);
* thin functions by name: :func:`relu_mlp`, :func:`one_layer`, residual and convolutional
  networks, loss heads.
* measured quantities of sampled networks: :mod:`~eit.sample.log_lengths` (log lengths of
  equal-width nets), :mod:`~eit.sample.pairs` (pairs of inputs and their distances),
  :mod:`~eit.sample.autograd` (per-layer gradient norms by autograd),
  :mod:`~eit.sample.logits` (random logits and targets).
"""

from .convnets import conv_net, conv_relu_lengths, mean_profile
from .engine import OPTIONAL, Pass, forward, gram_root, isometry_gap, trace
from .heads import SoftmaxCrossEntropy, random_labels, softmax_cross_entropy
from .laws import (
    DIRECTIONS,
    LAWS,
    BiasLaw,
    Initializer,
    Law,
    centered_exponential,
    check_initializer,
    directions,
    gaussian,
    gaussian_bias,
    gaussian_fixed,
    gaussian_variance,
    glorot,
    haar_orthogonal,
    he,
    lecun,
    named,
    normalize_rows,
    orthogonal,
    proposed_gain,
    rows,
    scheme_variance,
    sphere_rows,
    standard_normal,
    standard_uniform,
    truncated_normal,
    truncated_normal_variance,
    uniform,
    weight_normalized,
)
from .layers import (
    Activation,
    BatchNorm,
    Conv,
    Dense,
    Layer,
    LeakyReLU,
    ReLU,
    Residual,
    Scale,
    Serial,
    WeightNorm,
    as_serial,
    mlp,
    relu_block,
    serial,
    sin,
    tanh,
)
from .mlps import one_layer, relu_mlp
from .resnets import (
    linear_readout_moments,
    relu_layer,
    relu_then_linear,
    residual_log_lengths,
    residual_net,
)
from .traces import Trace, UndefinedRatio

__all__ = [
    "Activation", "BatchNorm", "BiasLaw", "Conv", "DIRECTIONS", "Dense", "Initializer", "LAWS",
    "Law", "Layer", "LeakyReLU", "OPTIONAL", "Pass", "ReLU", "Residual", "Scale", "Serial",
    "SoftmaxCrossEntropy", "Trace", "UndefinedRatio", "WeightNorm", "as_serial",
    "centered_exponential", "check_initializer", "conv_net", "conv_relu_lengths", "directions",
    "forward", "gaussian", "gaussian_bias", "gaussian_fixed", "gaussian_variance", "glorot",
    "gram_root", "haar_orthogonal", "he", "isometry_gap", "lecun", "linear_readout_moments",
    "mean_profile", "mlp", "named", "normalize_rows", "one_layer", "orthogonal",
    "proposed_gain", "random_labels", "relu_block", "relu_layer", "relu_mlp",
    "relu_then_linear", "residual_log_lengths", "residual_net", "rows", "scheme_variance",
    "serial", "sin", "softmax_cross_entropy", "sphere_rows", "standard_normal",
    "standard_uniform", "tanh", "trace", "truncated_normal", "truncated_normal_variance",
    "uniform", "weight_normalized",
]
