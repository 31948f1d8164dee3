"""Unpickle the data.pkl of a framework's RNG file without running code.

pickle.Unpickler calls whatever callable a pickle names; here find_class
answers only the few globals an RNG file holds, each mapped to a small
constructor of ours that checks its arguments, and refuses every other
global by name before anything is called.  torch's storage records
(persistent ids) are answered from the members the archive check
(_archive.read_archive) has already verified.  Unlike torch.load with
weights_only=True (which allows a similar list of globals), the storage
bytes here are CRC-checked and the tensor is built by us.
"""
import io
import pickle

from rngsnap import CorruptError


class _Storage:
    """The tag torch.ByteStorage stands for in a persistent id."""


def _ordered_dict(*args):
    import collections
    if args:
        raise ValueError("OrderedDict with arguments")
    return collections.OrderedDict()


def _encode(text, encoding):
    # numpy pickles raw array bytes as _codecs.encode(str, 'latin1')
    if not isinstance(text, str) or encoding != "latin1":
        raise ValueError("_codecs.encode other than str, 'latin1'")
    return text.encode("latin1")


def _reconstruct(cls, shape, typecode):
    import numpy
    if cls is not numpy.ndarray or shape != (0,) or typecode != b"b":
        raise ValueError("numpy _reconstruct of another shape")
    return numpy.ndarray((0,), dtype="b")


def _dtype(name, align, copy):
    import numpy
    if name not in ("u4", "u1", "i8", "f8") or align or not copy:
        raise ValueError(f"numpy dtype {name!r}")
    return numpy.dtype(name)


def _rebuild_tensor(storage, offset, size, stride, requires_grad, hooks,
                    metadata=None):
    import torch
    if (not isinstance(storage, bytes) or offset != 0
            or tuple(size) != (len(storage),) or tuple(stride) != (1,)
            or requires_grad or hooks or metadata):
        raise ValueError("a tensor other than a flat byte tensor")
    return torch.frombuffer(bytearray(storage), dtype=torch.uint8).clone()


def _numpy_ndarray():
    import numpy
    return numpy.ndarray


_ALLOWED = {
    ("collections", "OrderedDict"): lambda: _ordered_dict,
    ("_codecs", "encode"): lambda: _encode,
    ("numpy._core.multiarray", "_reconstruct"): lambda: _reconstruct,
    ("numpy.core.multiarray", "_reconstruct"): lambda: _reconstruct,
    ("numpy", "ndarray"): _numpy_ndarray,
    ("numpy", "dtype"): lambda: _dtype,
    ("torch._utils", "_rebuild_tensor_v2"): lambda: _rebuild_tensor,
    ("torch", "ByteStorage"): lambda: _Storage,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, members, path):
        super().__init__(io.BytesIO(data))
        self._members = members
        self._path = path

    def find_class(self, module, name):
        make = _ALLOWED.get((module, name))
        if make is None:
            raise CorruptError(
                f"rngsnap: the restricted unpickler refuses the global "
                f"'{module}.{name}' in data.pkl of {self._path}: an RNG "
                f"file holds only random, NumPy and torch generator states; "
                f"nothing was run and nothing restored: do not load this "
                f"file, resume from a checkpoint you trust")
        return make()

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or pid[1] is not _Storage or pid[3] != "cpu"):
            raise CorruptError(
                f"rngsnap: {self._path} names a storage record of another "
                f"kind ({pid!r:.80}); nothing was restored: resume from a "
                f"checkpoint you trust")
        data = self._members.get(f"data/{pid[2]}")
        if data is None or len(data) != pid[4]:
            raise CorruptError(
                f"rngsnap: {self._path} lacks storage record data/{pid[2]} "
                f"of {pid[4]} bytes; nothing was restored: resume from "
                f"another checkpoint")
        return data


def load_members(members, path):
    """The object data.pkl of the verified archive members holds."""
    try:
        return _Unpickler(members["data.pkl"], members, path).load()
    except CorruptError:
        raise
    except Exception as e:   # any malformed pickle: a damaged file
        raise CorruptError(
            f"rngsnap: {path} is damaged (data.pkl does not unpickle: "
            f"{type(e).__name__}: {e}); nothing was restored: resume from "
            f"another checkpoint, or start without adopting") from None
