"""Layer core: the pickle-free, versioned byte encodings of the generator
states that rngsnap.torch saves as app states, and the header that every
encoding of rngsnap starts with (docs/python.md, "Encodings").

Every encoding starts with a 4-byte magic and a version byte, so a reader
refuses a state it does not know instead of guessing.  All integers are
little-endian.  Decoders check every length and range before returning,
and raise rngsnap errors: CorruptError for bytes that cannot be a state
of this kind, MismatchError for a well-formed state this process cannot
take (a newer version, a generator of another size).
"""

import struct

from .errors import CorruptError, MismatchError, error

# Header: magic (4 bytes), version (u8), three reserved bytes (zero).
_HEAD = struct.Struct("<4sB3s")
_ZERO3 = b"\0\0\0"
HEAD_SIZE = _HEAD.size


def head(magic, version=1):
    """The 8-byte header of an encoding."""
    return _HEAD.pack(magic, version, _ZERO3)


def check_head(name, data, magic, versions):
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise error(CorruptError, "%s: state is %s, not bytes"
                    % (name, type(data).__name__))
    data = bytes(data)
    if len(data) < _HEAD.size:
        raise error(CorruptError, "%s: state is %d bytes, shorter than the "
                    "%d-byte header" % (name, len(data), _HEAD.size))
    got, version, pad = _HEAD.unpack_from(data)
    if got != magic:
        raise error(CorruptError, "%s: state starts with %r, expected magic "
                    "%r" % (name, got, magic))
    if version not in versions:
        raise error(MismatchError, "%s: state encoding version %d, this "
                    "rngsnap reads version(s) %s" % (
                        name, version, ", ".join(map(str, versions))))
    if pad != _ZERO3:
        raise error(CorruptError, "%s: reserved header bytes are not zero"
                    % name)
    return data


# ---- a torch generator: its get_rng_state() bytes, as they are ----------
# "RSTG" v1: header, u32 length, then the bytes.  The length must equal the
# live generator's (checked by the caller, which knows it), unless the
# caller can convert between the forms of two torch versions (CUDA's).
TORCH_MAGIC = b"RSTG"
_TORCH_LEN = struct.Struct("<I")


def encode_torch(raw):
    raw = bytes(raw)
    return head(TORCH_MAGIC) + _TORCH_LEN.pack(len(raw)) + raw


def decode_torch(name, data, expect_len, forms=None):
    """The generator bytes of data for a live generator of expect_len
    bytes.  forms: (sizes, convert) when the generator's state has one
    form per torch version: a state of one of those sizes is returned as
    convert(bytes)."""
    data = check_head(name, data, TORCH_MAGIC, (1,))
    off = _HEAD.size
    if len(data) < off + _TORCH_LEN.size:
        raise error(CorruptError, "%s: state truncated before its length"
                    % name)
    (n,) = _TORCH_LEN.unpack_from(data, off)
    off += _TORCH_LEN.size
    if n != len(data) - off:
        raise error(CorruptError, "%s: state says %d generator bytes, holds "
                    "%d" % (name, n, len(data) - off))
    if n != expect_len and forms and n in forms[0] and expect_len in forms[0]:
        return forms[1](data[off:])
    if n != expect_len:
        raise error(MismatchError, "%s: checkpoint holds a %d-byte generator "
                    "state, this process's generator has %d bytes (another "
                    "torch version or device type?)" % (name, n, expect_len))
    return data[off:]


# ---- NumPy's legacy global generator (np.random.get_state()) ------------
# "RSNP" v1: header, key u32[624], pos u32, has_gauss u32, cached_gaussian
# f64.  2520 bytes.
NUMPY_MAGIC = b"RSNP"
_NP_BODY = struct.Struct("<624III d")


def encode_numpy(state):
    kind, key, pos, has_gauss, gauss = state
    if kind != "MT19937" or len(key) != 624:
        raise error(MismatchError, "numpy.global: generator %r with %d key "
                    "words, rngsnap encodes MT19937 with 624"
                    % (kind, len(key)))
    return head(NUMPY_MAGIC) + _NP_BODY.pack(
        *[int(k) for k in key], int(pos), int(has_gauss), float(gauss))


def decode_numpy(name, data):
    data = check_head(name, data, NUMPY_MAGIC, (1,))
    want = _HEAD.size + _NP_BODY.size
    if len(data) != want:
        raise error(CorruptError, "%s: state is %d bytes, version 1 is %d"
                    % (name, len(data), want))
    v = _NP_BODY.unpack_from(data, _HEAD.size)
    key, pos, has_gauss, gauss = v[:624], v[624], v[625], v[626]
    if pos > 624 or has_gauss > 1:
        raise error(CorruptError, "%s: position %d (at most 624) or has_gauss "
                    "%d (0 or 1) out of range" % (name, pos, has_gauss))
    if not has_gauss and gauss != 0.0:  # get_state() gives 0.0 then
        raise error(CorruptError, "%s: cached_gaussian set without has_gauss"
                    % name)
    return ("MT19937", key, pos, has_gauss, gauss)


# ---- Python's random (random.getstate(), version 3) ---------------------
# "RSPY" v1: header, 625 u32 (624 key words, then the position),
# has_gauss u32, gauss_next f64.  2520 bytes.
PYTHON_MAGIC = b"RSPY"
_PY_BODY = struct.Struct("<625II d")


PY_BODY_SIZE = _PY_BODY.size


def python_body(state, name="python.random"):
    """The body of a random.getstate() tuple (also the payload of a
    registered random.Random, genstate.py)."""
    version, words, gauss_next = state
    if version != 3 or len(words) != 625:
        raise error(MismatchError, "%s: state version %r with %d words, "
                    "rngsnap encodes version 3 with 625"
                    % (name, version, len(words)))
    has = gauss_next is not None
    return _PY_BODY.pack(*words, int(has), float(gauss_next) if has else 0.0)


def python_state(name, data, offset=0):
    """The random.setstate() tuple of the body at data[offset:], checked."""
    v = _PY_BODY.unpack_from(data, offset)
    words, has, gauss = v[:625], v[625], v[626]
    if words[624] > 624 or has > 1:
        raise error(CorruptError, "%s: position %d (at most 624) or has_gauss "
                    "%d (0 or 1) out of range" % (name, words[624], has))
    if not has and gauss != 0.0:
        raise error(CorruptError, "%s: gauss_next set without has_gauss"
                    % name)
    return (3, tuple(words), gauss if has else None)


def encode_python(state):
    return head(PYTHON_MAGIC) + python_body(state)


def decode_python(name, data):
    data = check_head(name, data, PYTHON_MAGIC, (1,))
    want = _HEAD.size + _PY_BODY.size
    if len(data) != want:
        raise error(CorruptError, "%s: state is %d bytes, version 1 is %d"
                    % (name, len(data), want))
    return python_state(name, data, _HEAD.size)
