"""The book's pytest configuration: the default scale, nbval with statistical comparison, and
the slowest chapters scheduled first."""

import json
import os
from pathlib import Path

os.environ["EIT_SCALE"] = os.environ.get("EIT_SCALE", "default")

pytest_plugins = ["eit.verdicts.nbval_plugin"]


def _recorded_wall_time(path: Path) -> float:
    try:
        return float(json.loads(path.read_text())["metadata"]["eit"]["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def pytest_collection_modifyitems(config, items):
    """Chapter notebooks first, the slowest first (their cells stay in order), then the rest:
    with ``--dist loadscope`` on two cores the slowest chapter then never starts last."""
    cost: dict[Path, float] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb" and path not in cost:
            cost[path] = _recorded_wall_time(path)
    order = {p: i for i, p in enumerate(sorted(cost, key=lambda p: (-cost[p], str(p))))}
    items.sort(key=lambda it: order.get(Path(str(it.fspath)), len(order)))
