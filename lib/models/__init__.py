"""Constructed and trainable networks of the papers, each module one paper's construction.

* :mod:`~eit.models.weightnorm`: Arpit & Bengio (2019), weight normalization and K_n;
* :mod:`~eit.models.wn_init`: Arpit, Campos & Bengio (2019), weight-normalized MLPs and
  ResNets at initialization and trainable ones;
* :mod:`~eit.models.batchnorm`: Meterez et al. (2024), BN, the isometry gap, shaped networks;
* :mod:`~eit.models.linear_resnet`, :mod:`~eit.models.expressivity`,
  :mod:`~eit.models.conv_resnet`: Hardt & Ma (2017).
* :mod:`~eit.models.isometry_lemmas`, :mod:`~eit.models.bn_one_layer`,
  :mod:`~eit.models.gap_decay`, :mod:`~eit.models.bn_jacobian`,
  :mod:`~eit.models.jacobian_budget`: Meterez et al. (2024), the per-batch measurements of
  their lemmas (isometry gap, one BN layer, its decay in depth, the BN Jacobian, the
  Jacobian budget of Appendix D);
* :mod:`~eit.models.residual_growth`: the growth of a residual block against an affine law.

The random networks are layer descriptions of :mod:`eit.sample.layers` run by the engines.
The modules keep their names (``from eit.models import batchnorm as bnm``) and their public
functions are re-exported here, except :func:`eit.models.conv_resnet.conv_resnet`, whose
module has its name.
"""

from . import batchnorm, conv_resnet, expressivity, linear_resnet, weightnorm, wn_init
from .batchnorm import (
    bn,
    bn_centered,
    bn_net,
    bn_standard,
    first_layer_grad_lognorm,
    first_layer_grads,
    gram_eigenvalues,
    isometry,
    isometry_gap,
    isometry_gaps_in_depth,
    logit_loss_gradient,
    readout_pass,
    row_norm_factor,
    shaped_first_layer_grad_lognorm,
    shaped_leaky_relu,
    shaped_net,
    shaped_nonlinearity,
    shaped_weight_grad_lognorms,
    spectral_inputs,
    unit_readout,
    weight_grad_lognorms,
)
from .conv_resnet import (
    ConvResNet,
    architecture_size,
    block_factor,
    forward_sq_norms,
    init_std,
    one_stage_net,
    standardize,
)
from .weightnorm import (
    k_constant,
    k_printed,
    layer_sq_ratio,
    log_grad_ratio,
    prop3_sq_norm,
    sphere_area,
    wallis,
    weight_normalized,
    wn_network,
    wn_relu_mlp,
)
from .wn_init import (
    WNMLP,
    WNLayer,
    WNResNet,
    wn_block,
    wn_mlp_model,
    wn_resnet,
    wn_resnet_model,
    wn_resnet_net,
    wn_stage_net,
    wn_stage_resnet,
)

__all__ = ["ConvResNet", "WNLayer", "WNMLP", "WNResNet", "architecture_size", "batchnorm",
           "block_factor", "bn", "bn_centered", "bn_net", "bn_standard", "conv_resnet",
           "expressivity", "first_layer_grad_lognorm", "first_layer_grads", "forward_sq_norms",
           "gram_eigenvalues", "init_std", "isometry", "isometry_gap", "isometry_gaps_in_depth",
           "k_constant", "k_printed", "layer_sq_ratio", "linear_resnet", "log_grad_ratio",
           "logit_loss_gradient", "one_stage_net", "prop3_sq_norm", "readout_pass",
           "row_norm_factor", "shaped_first_layer_grad_lognorm", "shaped_leaky_relu", "shaped_net",
           "shaped_nonlinearity", "shaped_weight_grad_lognorms", "spectral_inputs", "sphere_area",
           "standardize", "unit_readout", "wallis", "weight_normalized", "weightnorm", "wn_block",
           "wn_init", "wn_mlp_model", "wn_network", "wn_relu_mlp", "wn_resnet", "wn_resnet_model",
           "weight_grad_lognorms", "wn_resnet_net", "wn_stage_net", "wn_stage_resnet"]
