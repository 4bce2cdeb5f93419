"""eit: the shared library of the book *Executable Initialization Theory*.

Modules, one concept each: :mod:`eit.device` (device, seeds, scale switch),
:mod:`eit.initializers` (batched weight samplers), :mod:`eit.propagation` (batched
forward/backward passes in log space), :mod:`eit.exact` (exact laws), :mod:`eit.symbolic`
(SymPy helpers), :mod:`eit.stats` (estimates with standard errors), :mod:`eit.checks`
(verdicts), :mod:`eit.ledger` (the claims ledger), :mod:`eit.plotting` (one figure style).
"""

__version__ = "0.1.0"
