import numpy as np
import pytest

from eit.core import store as data


def test_roundtrip_and_checksum(tmp_path):
    path = data.save_result("part/fig", {"x": np.arange(3.0)}, seed=1, command="test",
                            root=tmp_path, note="n")
    assert data.has_result("part/fig", root=tmp_path)
    arrays, prov = data.load_result("part/fig", root=tmp_path)
    assert np.array_equal(arrays["x"], np.arange(3.0))
    assert prov["seed"] == 1 and prov["note"] == "n" and len(prov["sha256"]) == 64
    path.write_bytes(path.read_bytes() + b"tampered")
    with pytest.raises(ValueError, match="checksum"):
        data.load_result("part/fig", root=tmp_path)


def test_bad_names_and_missing(tmp_path):
    with pytest.raises(ValueError, match="name"):
        data.save_result("../escape", {"x": np.zeros(1)}, seed=0, command="c", root=tmp_path)
    with pytest.raises(ValueError, match="arrays"):
        data.save_result("ok", {}, seed=0, command="c", root=tmp_path)
    with pytest.raises(FileNotFoundError):
        data.load_result("absent", root=tmp_path)
