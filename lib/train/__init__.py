"""Training at initialization scale: data, many SGD runs at once, curvature.

* :mod:`eit.train.sgd`: scikit-learn's bundled digits (:func:`digits`), 10,000 real MNIST
  digits stored in ``data/`` (:func:`mnist`, the same split), and one SGD run
  (:func:`eit.train.sgd.sgd`, the single-run reference the batched engine is tested against);
* :mod:`eit.train.batched`: the batched training engine, :func:`eit.train.batched.train`:
  ``R`` independent runs of one *stacked* model (parameters with a leading run axis: the
  weight-normalized nets of :mod:`eit.models.wn_stacked`, the ReLU nets of
  :mod:`eit.models.relu_stacked`, the shaped MLPs of :mod:`eit.models.shaped_mlp`), each with
  its own learning rate, schedule, mini-batch order and divergence test, in one batched pass;
* :mod:`eit.train.start_of_training`: censored epoch counts (Hanin & Rolnick);
* :mod:`eit.train.curvature` and :mod:`eit.train.lanczos`: the largest Hessian eigenvalue by
  power iteration and by Lanczos iteration (Hessian-vector products only).
* :mod:`eit.train.sweep`: learning-rate sweeps of many seeds in one batched run;
  :mod:`eit.train.runs`: reading batched runs (split by configuration, first epoch below a
  level); :mod:`eit.train.gradient_growth`, :mod:`eit.train.batch_rank`: gradients and data
  batches at initialization; :mod:`eit.train.images`: the bundled images and digits batches.
"""

from . import batched, curvature, lanczos, sgd, start_of_training
from .sgd import Digits, digits, mnist

__all__ = ["batched", "curvature", "lanczos", "sgd", "start_of_training", "Digits", "digits",
           "mnist"]
