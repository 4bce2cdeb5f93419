"""The device guard (:mod:`eit.core.guard`): it fails where CUDA fails, and nowhere else.

The guard switches on for a whole process and stays on, so each check runs in a fresh Python
process with ``EIT_DEVICE=sim``. The negative controls reintroduce each class of bug that the
first run of the book on a GPU hit (``shared/gpu/cuda-nbval-failures.log``): a host tensor
meeting device data (the cross-entropy target of Arpit-Bengio 03; the training engine's
``bmm`` and ``nll_loss``), a generator of the other device (Hanin-Rolnick 01), and NumPy on a
device tensor. Each must fail with a message that names the operation and the two devices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import json, torch
import torch.nn.functional as F
from eit.core.device import device, randn
from eit.core.seeds import generator
from eit.core import guard
dev = device()
gen = generator(0)
"""


def run_guarded(body: str) -> dict:
    """Run ``body`` (which sets ``result``, a JSON-able dict) in a process under the guard."""
    # os._exit: autograd's device thread for the simulated backend is not joined at
    # interpreter teardown and may abort the exit (after the result is written)
    code = (PRELUDE + textwrap.dedent(body) + "\nprint(json.dumps(result), flush=True)\n"
            "import os\nos._exit(0)\n")
    env = dict(os.environ, EIT_DEVICE="sim")
    env.pop("EIT_SEED", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def caught(statement: str) -> str:
    """A snippet that runs ``statement`` and records the guard's message (or None)."""
    return textwrap.dedent(f"""
    try:
        {statement}
        result = {{"message": None}}
    except guard.DeviceMixError as err:
        result = {{"message": str(err)}}
    """)


@pytest.mark.parametrize("statement, operation, devices", [
    # Arpit-Bengio 03: the cross-entropy target built on the host
    ("F.cross_entropy(randn(1, 10, gen=gen), torch.tensor([3]))", "nll_loss",
     ("eitsim:0", "cpu")),
    # the training engine: a host batch against device weights
    ("torch.bmm(torch.ones(2, 3, 4, dtype=torch.float64), randn(2, 4, 5, gen=gen))", "bmm",
     ("eitsim:0", "cpu")),
    # an elementwise operation of a device tensor with a host vector
    ("randn(3, gen=gen) + torch.ones(3, dtype=torch.float64)", "add", ("eitsim:0", "cpu")),
    # Hanin-Rolnick 01: a host draw with the device's generator
    ("torch.randn(4, 3, generator=gen, dtype=torch.float64)", "randn", ("cpu", "eitsim:0")),
    ("torch.nn.init.kaiming_normal_(torch.empty(4, 3, dtype=torch.float64), generator=gen)",
     "normal_", ("cpu", "eitsim:0")),
    # and the converse: a device draw with a host generator
    ("torch.randn(3, generator=torch.Generator(), device=dev)", "randn", ("eitsim:0", "cpu")),
])
def test_guard_catches_each_bug_class(statement, operation, devices):
    message = run_guarded(caught(statement))["message"]
    assert message is not None, f"the guard let {statement!r} through"
    assert operation in message
    for name in devices:
        assert name in message


def test_numpy_of_a_device_tensor_fails_as_on_cuda():
    result = run_guarded("""
    import numpy as np
    x = randn(3, gen=gen)
    result = {}
    for name, convert in [("numpy", lambda: x.numpy()), ("asarray", lambda: np.asarray(x))]:
        try:
            convert()
            result[name] = None
        except guard.DeviceMixError as err:
            result[name] = str(err)
    result["cpu_first"] = np.asarray(x.cpu()).shape[0]
    """)
    for name in ("numpy", "asarray"):
        assert result[name] is not None and "eitsim:0" in result[name]
    assert result["cpu_first"] == 3


def test_what_cuda_allows_passes_and_computes_the_cpu_values():
    result = run_guarded("""
    x = randn(3, 4, gen=gen)
    ref = torch.randn(3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    w = torch.zeros(4, 2, dtype=torch.float64, device=dev, requires_grad=True)
    loss = F.cross_entropy(x @ (w + 1), torch.tensor([0, 1, 1], device=dev))
    loss.backward()
    before = dict(guard.SYNCS)
    value = float(loss)
    result = {
        "device": str(x.device), "type": type(x).__name__,
        "same_values": x.cpu().tolist() == ref.tolist(),
        "scalar": str((x * torch.tensor(2.0, dtype=torch.float64)).device),
        "host_index": str(x[torch.tensor([0, 2])].device),
        "list_index": str(x[[0, 2], 1:].device),
        "to_device": str(torch.arange(3).to(dev).device),
        "grad": str(w.grad.device), "finite": value == value,
        "item_counted": guard.SYNCS["item"] - before["item"],
        "new_like": str(torch.zeros(2, device=x.device).device),
    }
    """)
    assert result["device"] == "eitsim:0" and result["type"] == "SimTensor"
    assert result["same_values"]  # the simulated device draws the CPU's streams
    for key in ("scalar", "host_index", "list_index", "to_device", "grad", "new_like"):
        assert result[key] == "eitsim:0", key
    assert result["finite"] and result["item_counted"] == 1


def test_library_fix_is_exercised():
    """The library's cross-entropy gradients (Arpit-Bengio 03) run on the device of the data."""
    result = run_guarded("""
    from eit.sample.autograd import relu_mlp_grad_norms
    w = [randn(4, 3, gen=gen), randn(2, 4, gen=gen)]
    gw, ga, h = relu_mlp_grad_norms(w, randn(2, 3, gen=gen), [0, 1])
    result = {"device": str(gw.device)}
    """)
    assert result["device"] == "eitsim:0"
