"""Where a chapter's data come from: the notebook cells that draw them.

Pre-registration (DESIGN.md section 3a) asks that the test of a claim is declared before the
data that decide it exist. A check can see when its *estimates* were made (each remembers its
cell), but data are drawn earlier, by a random generator or read from the store. This module
links a check to the cells that drew its data:

* every generator of :mod:`eit.core.seeds` and every result read by
  :func:`eit.core.store.load_result` is registered with the cell it was made in;
* a criterion, when declared in a notebook, takes a :func:`snapshot` of the state of every
  registered generator;
* a check names its sources (``drawn_by=``) and :func:`check_drawn_after` refuses one that
  cannot have drawn after the criterion: a generator that existed when the criterion was
  declared and has not drawn since (its state is unchanged), or a result read, or a
  :func:`measured` token made, in the criterion's cell or before it.

A generator created after the criterion (in a later cell, or later in the same cell) drew
everything after it. A generator that existed before and has drawn since may also have drawn
earlier: the rule catches data drawn first and judged later, not every misuse, and a chapter
must name its sources truthfully (a reviewer reads ``drawn_by=`` next to the check).

Cells are counted with IPython's ``pre_run_cell`` event (:func:`execution_count`); outside
a notebook nothing is registered or required.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["execution_count", "register", "made_in", "Snapshot", "snapshot", "Measured",
           "measured", "check_drawn_after"]

_CELLS = {"count": 0, "shell": None}


def _tick(*_args) -> None:
    _CELLS["count"] += 1


def execution_count() -> int | None:
    """A counter of the notebook cells run so far in this kernel, or None outside IPython.

    Counted with IPython's ``pre_run_cell`` event, which fires for every cell whether or not
    the frontend stores history (nbval does not, so IPython's own execution count stands
    still there). Only the order matters: a larger count is a later cell.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the book
        return None
    shell = get_ipython()
    if shell is None:
        return None
    if _CELLS["shell"] is not shell:
        shell.events.register("pre_run_cell", _tick)
        _CELLS["shell"], _CELLS["count"] = shell, 0
        _SOURCES.clear()
    return _CELLS["count"]


@dataclass
class _Source:
    obj: object          # held, so that its id() cannot be reused while registered
    cell: int
    order: int           # registration order (sources made in one cell are ordered too)


_SOURCES: dict[int, _Source] = {}
_ORDER = [0]


def _next() -> int:
    _ORDER[0] += 1
    return _ORDER[0]


def register(obj: object) -> object:
    """Record the cell in which ``obj`` (a generator, stored data) was made; return ``obj``.

    Outside a notebook this does nothing.
    """
    cell = execution_count()
    if cell is not None:
        _SOURCES[id(obj)] = _Source(obj, cell, _next())
    return obj


def made_in(obj: object) -> int | None:
    """The cell a registered source was made in, or None when it is not registered."""
    src = _SOURCES.get(id(obj))
    return None if src is None or src.obj is not obj else src.cell


def _is_generator(obj: object) -> bool:
    return isinstance(obj, (torch.Generator, np.random.Generator))


def _state(gen) -> bytes:
    """A digest of a generator's state (no device synchronization: CUDA keeps it on the host)."""
    if isinstance(gen, np.random.Generator):
        raw = repr(gen.bit_generator.state).encode()
    else:
        raw = gen.get_state().numpy().tobytes()
    return hashlib.sha256(raw).digest()


@dataclass(frozen=True)
class Snapshot:
    """The registered generators' states when a criterion was declared."""

    cell: int
    order: int
    states: dict = field(default_factory=dict)


def snapshot() -> Snapshot | None:
    """The state of every registered generator now, with the cell; None outside a notebook."""
    cell = execution_count()
    if cell is None:
        return None
    states = {k: _state(s.obj) for k, s in _SOURCES.items() if _is_generator(s.obj)}
    return Snapshot(cell, _next(), states)


@dataclass(frozen=True, eq=False)
class Measured:
    """A token for data that no generator of the book draws (timings, a measurement).

    Make it in the cell that measures (:func:`measured`) and pass it as ``drawn_by``.
    """

    what: str


def measured(what: str) -> Measured:
    """A token that the data ``what`` are measured in this cell (see :class:`Measured`).

    Examples
    --------
    >>> measured("timings of the engines").what
    'timings of the engines'
    """
    if not isinstance(what, str) or not what.strip():
        raise ValueError(f"what must name the measured data, got {what!r}")
    return register(Measured(what))


def _sources(drawn_by) -> list:
    if isinstance(drawn_by, (list, tuple)):
        if not drawn_by:
            raise ValueError("drawn_by must name at least one source of the data")
        return list(drawn_by)
    return [drawn_by]


def check_drawn_after(snap: Snapshot | None, drawn_by, *, required: bool) -> None:
    """Refuse data sources that cannot have drawn after the criterion's snapshot.

    Parameters
    ----------
    snap : Snapshot or None
        The criterion's :func:`snapshot` (None outside a notebook: nothing is checked).
    drawn_by : source or sequence of sources, or None
        Generators of :mod:`eit.core.seeds`, stored data from
        :func:`eit.core.store.load_result`, :func:`measured` tokens.
    required : bool
        Whether a check of this kind must name its sources (statistical checks in a
        notebook).

    Raises
    ------
    ValueError
        ``drawn_by`` missing where required, or a source made or last drawn before the
        criterion, naming the cells.
    TypeError
        A source that is not registered (a generator not made by :mod:`eit.core.seeds`).
    """
    if snap is not None and not isinstance(snap, Snapshot):
        raise TypeError(f"snap must be a Snapshot (a criterion's drawn_state) or None, got "
                        f"{type(snap).__name__}")
    if not isinstance(required, bool):
        raise TypeError(f"required must be a bool, got {type(required).__name__}")
    if snap is None:
        return
    if drawn_by is None:
        if required:
            raise ValueError(
                "drawn_by must name the sources of the data (the generators of "
                "eit.core.seeds.generator/numpy_rng that drew them, the data of "
                "eit.core.store.load_result, or eit.core.provenance.measured(...)): the "
                f"criterion declared in cell [{snap.cell}] must precede the draws")
        return
    for i, obj in enumerate(_sources(drawn_by)):
        where = f"drawn_by[{i}]" if isinstance(drawn_by, (list, tuple)) else "drawn_by"
        src = _SOURCES.get(id(obj))
        if src is None or src.obj is not obj:
            raise TypeError(
                f"{where} must be a generator of eit.core.seeds (generator, numpy_rng), data "
                "of eit.core.store.load_result or a measured() token, made in this kernel; "
                f"got {type(obj).__name__}")
        if src.order > snap.order:
            continue                         # made after the criterion: every draw is later
        if _is_generator(obj):
            before = snap.states.get(id(obj))
            if before is not None and before != _state(obj):
                continue                     # it has drawn since the criterion
            raise ValueError(
                f"{where}: the generator made in cell [{src.cell}] has drawn nothing since "
                f"the criterion was declared in cell [{snap.cell}], so the data it judges were "
                "drawn before it: declare the criterion ahead of the draws")
        raise ValueError(
            f"{where}: the data were made in cell [{src.cell}], before the criterion declared "
            f"in cell [{snap.cell}]: declare the criterion ahead of the experiment")
