"""Layer core: a torch generator's state tensor as bytes, and back.

The state encodings (encoding.py, genstate.py) take and give bytes; torch's
get_state()/set_state() take and give a uint8 CPU tensor.  Imports torch
and NumPy only when called, that is once the caller holds a torch
generator.
"""


def tensor_bytes(t):
    """The bytes of state tensor t (any device)."""
    return t.cpu().numpy().tobytes()


def bytes_tensor(raw):
    """A uint8 CPU tensor of its own holding raw."""
    import numpy
    import torch
    return torch.from_numpy(numpy.frombuffer(raw, dtype=numpy.uint8).copy())
