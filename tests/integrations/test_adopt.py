"""rngsnap.integrations._adopt on a real accelerate random_states_0.pkl:
the reader gives what torch.load gives, restores it all or nothing, and
refuses a flipped byte in the tensor storage (which torch.load itself
loads silently) and a pickle naming a foreign global, nothing restored."""
import os
import random
import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("accelerate", reason="accelerate does not import for "
                    "this interpreter (tests/requirements.txt)")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import rngsnap  # noqa: E402
from rngsnap.integrations import _adopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("accelerate") / "ck"
    subprocess.run([sys.executable, os.path.join(HERE, "adopt_make.py"),
                    str(d)], check=True, capture_output=True, timeout=300)
    return d


def _live():
    return (torch.get_rng_state().clone(), np.random.get_state(),
            random.getstate())


def _same(a, b):
    return (torch.equal(a[0], b[0]) and a[2] == b[2]
            and all(np.array_equal(x, y) for x, y in zip(a[1], b[1])))


def test_reads_what_torch_load_reads(folder):
    path = folder / "random_states_0.pkl"
    ours = _adopt.read_accelerate_states(path)
    theirs = torch.load(path, weights_only=False)
    assert ours["random_state"] == theirs["random_state"]
    assert torch.equal(ours["torch_manual_seed"], theirs["torch_manual_seed"])
    assert np.array_equal(ours["numpy_random_seed"][1],
                          theirs["numpy_random_seed"][1])


def test_adopt_restores_the_file(folder):
    theirs = torch.load(folder / "random_states_0.pkl", weights_only=False)
    line = _adopt.adopt_accelerate(folder, 0)
    assert "random_states_0.pkl (accelerate's own RNG file)" in line
    assert random.getstate() == theirs["random_state"]
    assert torch.equal(torch.get_rng_state(), theirs["torch_manual_seed"])
    assert np.array_equal(np.random.get_state()[1],
                          theirs["numpy_random_seed"][1])


def test_flipped_storage_byte_refused(folder, tmp_path):
    path = folder / "random_states_0.pkl"
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        rec = next(i for i in z.infolist() if "/data/" in i.filename
                   and i.file_size > 1000)
    # the record's bytes start after its local header (30 + name + extra)
    start = rec.header_offset + 30 + len(rec.filename.encode()) + \
        int.from_bytes(data[rec.header_offset + 28:rec.header_offset + 30],
                       "little")
    data[start + 100] ^= 0x01
    bad = tmp_path / "random_states_0.pkl"
    bad.write_bytes(bytes(data))
    torch.load(bad, weights_only=False)  # torch itself loads it silently
    before = _live()
    with pytest.raises(rngsnap.CorruptError):
        _adopt.adopt_accelerate(tmp_path, 0)
    assert _same(before, _live())  # nothing restored


def test_foreign_global_refused(folder, tmp_path):
    marker = tmp_path / "ran"

    # a real torch archive whose data.pkl would run os.system on load
    torch.save({"random_state": _Evil(str(marker))},
               tmp_path / "random_states_0.pkl")
    before = _live()
    with pytest.raises(rngsnap.CorruptError, match="refuses the global "
                       "'posix.system'|refuses the global 'os.system'"):
        _adopt.adopt_accelerate(tmp_path, 0)
    assert not marker.exists()  # the global never ran
    assert _same(before, _live())


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def test_missing_file_named(tmp_path):
    with pytest.raises(rngsnap.Error, match="random_states_0.pkl"):
        _adopt.adopt_accelerate(tmp_path, 0)
