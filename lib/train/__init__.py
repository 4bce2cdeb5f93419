"""Training at initialization scale: data, SGD runs, curvature.

* :mod:`eit.train.sgd`: scikit-learn's bundled digits (:func:`digits`), one SGD run, accuracy;
* :mod:`eit.train.stacked_sgd`: many runs of one *stacked* model trained at once (any model
  whose parameters carry a leading run axis, for example the shaped MLPs of Part IV);
* :mod:`eit.train.stacked` and :mod:`eit.train.batched_sgd`: the same idea specialised to the
  weight-normalized MLPs of Parts I and III (seeds x learning rates at once);
* :mod:`eit.train.epochs_to_accuracy`: epochs to a target accuracy for stacks of ReLU nets
  (Hanin & Rolnick), with :mod:`eit.train.start_of_training` for censored epoch counts;
* :mod:`eit.train.curvature` and :mod:`eit.train.lanczos`: the largest Hessian eigenvalue by
  power iteration and by Lanczos iteration (Hessian-vector products only).
"""

from . import (
    batched_sgd,
    curvature,
    epochs_to_accuracy,
    lanczos,
    sgd,
    stacked,
    stacked_sgd,
    start_of_training,
)
from .sgd import Digits, digits

__all__ = ["batched_sgd", "curvature", "epochs_to_accuracy", "lanczos", "sgd", "stacked",
           "stacked_sgd", "start_of_training", "Digits", "digits"]
