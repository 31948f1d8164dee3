"""Layer torch: the process-wide generators rngsnap.torch.track() puts in
the checkpoint, each as a Tracked (name, read, write, ledger reader):
torch's default CPU generator and each device's (torch.cpu,
torch.<acc>:<i>, in the pickle-free "RSTG" encoding), NumPy's legacy
global generator (numpy.global, "RSNP") and Python's random module
(python.random, "RSPY").
"""
import random

import numpy as np

from .._core import encoding as _enc
from .._core import genstate as _gs
from .._core import ledger_digest as _ld
from .._core.tensor_bytes import bytes_tensor, tensor_bytes


class Tracked:
    """One tracked generator: its name, how to read it as bytes (the saved
    encoding), how to set it from those bytes, and what the divergence
    ledger digests of it (ledger_digest.py; the encoding when None)."""

    def __init__(self, name, read, write, ledger=None):
        self.name, self.read, self.write = name, read, write
        self.ledger = ledger or read


def torch_generator(name, get, put):
    """A torch generator: get() -> its state tensor, put(tensor)."""
    def read():
        return _enc.encode_torch(tensor_bytes(get()))

    def write(data):
        live = tensor_bytes(get())
        forms = None
        if name.startswith("torch.cuda:"):
            # torch <= 2.0 gives 816 bytes, >= 2.1 16: the same seed and
            # offset, set in the live generator's form
            forms = ((_gs.CUDA_OLD_SIZE, _gs.CUDA_NEW_SIZE),
                     lambda raw: _gs.cuda_state_as(name, raw, live))
        raw = _enc.decode_torch(name, data, len(live), forms)
        put(bytes_tensor(raw))
    return Tracked(name, read, write, _ld.torch_raw(get))


def numpy_generator():
    """NumPy's legacy global generator (np.random.*)."""
    name = "numpy.global"

    def write(data):
        np.random.set_state(_enc.decode_numpy(name, data))
    read = lambda: _enc.encode_numpy(np.random.get_state())  # noqa: E731
    return Tracked(name, read, write,
                   _ld.numpy_legacy(np.random.mtrand._rand, read))


def python_generator():
    """Python's random module (its hidden random.Random)."""
    name = "python.random"

    def write(data):
        random.setstate(_enc.decode_python(name, data))
    read = lambda: _enc.encode_python(random.getstate())  # noqa: E731
    return Tracked(name, read, write,
                   _ld.python_random(random._inst, read))
