"""eit: the shared library of the book *Executable Initialization Theory*.

Packages, one concept each: :mod:`eit.core` (device, seeds, scale switch, validation, the
data store), :mod:`eit.sample` (weight laws and batched explicit passes), :mod:`eit.exact`
(exact laws, chains, moment recursions, Weingarten calculus, SymPy helpers),
:mod:`eit.models` (constructed and trainable networks), :mod:`eit.train` (data and
training), :mod:`eit.verdicts` (estimates, checks, the claims ledger) and
:mod:`eit.plotting` (one figure style).
"""

__version__ = "0.1.0"
