import os

os.environ.setdefault("EIT_SCALE", "default")
