"""eit: the shared library of the book *Executable Initialization Theory*.

Packages, one concept each: :mod:`eit.core` (device, seeds, scale switch, validation, the
data store), :mod:`eit.sample` (weight laws and batched explicit passes), :mod:`eit.exact`
(exact laws, chains, moment recursions, Weingarten calculus, SymPy helpers),
:mod:`eit.models` (constructed and trainable networks), :mod:`eit.train` (data and
training), :mod:`eit.verdicts` (estimates, checks, the claims ledger) and
:mod:`eit.plotting` (one figure style).
"""

import importlib

__version__ = "0.1.0"
__all__ = ["core", "sample", "exact", "models", "train", "verdicts", "plotting"]


def __getattr__(name: str):
    """``eit.sample``, ``eit.exact``, ...: the packages are imported on first use."""
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
