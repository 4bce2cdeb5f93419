"""The book's infrastructure: compute device and scale switch, seeds, validation, data store.

* :mod:`eit.core.device`: the compute device, the default/paper/smoke scale (:func:`at_scale`),
  float64 draws (:func:`randn`) and a one-line description of the machine;
* :mod:`eit.core.seeds`: seeded generators (:func:`generator`), shifted by ``EIT_SEED``;
* :mod:`eit.core.provenance`: the notebook cells that draw a chapter's data (a check's
  ``drawn_by`` must have drawn after its criterion was declared);
* :mod:`eit.core.guard`: the simulated second device (``EIT_DEVICE=sim``) that fails where
  CUDA would on mixed devices;
* :mod:`eit.core.validate`: argument checks that name the bad argument;
* :mod:`eit.core.store`: results saved to ``data/`` with provenance and checksums;
* :mod:`eit.core.paths`: the book's root folder.
* :mod:`eit.core.benchmarks`: the engines' benchmark file, read for the performance chapter.
* :mod:`eit.core.dispatch_counts`: ATen operations and host synchronizations counted per
  layer (a CPU-checkable proxy for kernel launches).
"""

# device has one job (the device and the scale switch), seeds another (the generators)
from . import device, guard, paths, provenance, seeds, store, validate
from .device import DTYPE, at_scale, description, randn, scale
from .seeds import generator, numpy_rng
from .store import DataError, load_result, save_result, verify

__all__ = ["device", "guard", "paths", "provenance", "seeds", "store", "validate", "DTYPE",
           "at_scale", "description", "randn", "scale", "generator", "numpy_rng", "DataError",
           "load_result", "save_result", "verify"]
