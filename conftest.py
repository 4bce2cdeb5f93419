"""The book's pytest configuration: the default scale, and nbval with statistical comparison."""

import os

os.environ["EIT_SCALE"] = os.environ.get("EIT_SCALE", "default")

pytest_plugins = ["eit.verdicts.nbval_plugin"]
