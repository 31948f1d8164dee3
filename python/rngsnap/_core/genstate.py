"""Layer core: the "RSGN" encoding of a generator registered with
ctx.register_generator (docs/python.md, "Encodings").

    header     "RSGN", version u8 (1), three zero bytes   (encoding.head)
    kind       u32: which generator (KINDS below)
    length     u32: payload bytes that follow, exactly
    payload    the kind's fields, little-endian

A Generator and its bit generator share a kind (the state is the bit
generator's); a RandomState is its bit generator's payload followed by
the cached Gaussian.  A CUDA torch generator is stored as (seed, offset),
whichever form torch gives (<= 2.0: 816 bytes, >= 2.1: 16), and set in
the live generator's form.  Nothing here imports torch or NumPy: states
are the plain values their get/set calls take.
"""

import struct

from . import encoding as _enc
from .errors import CorruptError, MismatchError, error

MAGIC = b"RSGN"
_PRE = struct.Struct("<II")  # kind, payload length
_M64 = (1 << 64) - 1

TORCH_RAW, TORCH_CUDA = 1, 2
RANDOM = 64
RANDOM_STATE = 0x100  # | the bit generator's kind

# NumPy bit generators: kind, payload layout, field names.
_NUMPY = {
    "PCG64": (16, struct.Struct("<QQQQII"),
              ("state_lo", "state_hi", "inc_lo", "inc_hi", "has_uint32",
               "uinteger")),
    "PCG64DXSM": (17, struct.Struct("<QQQQII"),
                  ("state_lo", "state_hi", "inc_lo", "inc_hi", "has_uint32",
                   "uinteger")),
    "MT19937": (18, struct.Struct("<624II"), None),
    "Philox": (19, struct.Struct("<4Q2Q4QIII"), None),
    "SFC64": (20, struct.Struct("<4QII"), None),
}
_GAUSS = struct.Struct("<Id")  # RandomState: has_gauss, gauss

# torch: a raw state is preceded by the device type, NUL-padded ASCII.
_DEVICE = struct.Struct("<16s")
_CUDA = struct.Struct("<QQ")  # seed, philox offset
CUDA_OLD_SIZE, CUDA_NEW_SIZE = 816, 16  # torch <= 2.0, >= 2.1
_CUDA_OLD_FILL = b"\xff" * 800  # torch's unused curandStateMtgp32 bytes


def kind_label(kind, device=None):
    """The name of a kind in messages: "numpy PCG64", "torch.Generator
    (cuda)", "numpy RandomState(MT19937)", ..."""
    if kind == TORCH_RAW:
        return "torch.Generator (%s)" % (device or "cpu")
    if kind == TORCH_CUDA:
        return "torch.Generator (cuda)"
    if kind == RANDOM:
        return "random.Random"
    inner = kind & ~RANDOM_STATE
    for bg, (code, _, _) in _NUMPY.items():
        if code == inner:
            return ("numpy RandomState(%s)" % bg if kind & RANDOM_STATE
                    else "numpy %s" % bg)
    return "kind %d" % kind


def _known(kind):
    return kind_label(kind) != "kind %d" % kind


def _frame(kind, payload):
    return _enc.head(MAGIC) + _PRE.pack(kind, len(payload)) + payload


def _bad(name, label, text):
    return error(CorruptError, "%s: %s state: %s" % (name, label, text))


def _unframe(name, data, kind, device=None):
    """The payload of data, checked to be a v1 state of kind."""
    data = _enc.check_head(name, data, MAGIC, (1,))
    off = _enc.HEAD_SIZE
    if len(data) < off + _PRE.size:
        raise error(CorruptError, "%s: state is %d bytes, truncated "
                    "before its kind and length (%d)"
                    % (name, len(data), off + _PRE.size))
    got, n = _PRE.unpack_from(data, off)
    off += _PRE.size
    if not _known(got):
        raise error(CorruptError, "%s: unknown generator kind %d"
                    % (name, got))
    if got != kind:
        saved = None
        if got == TORCH_RAW:  # name the device it was saved on
            saved = data[off:off + _DEVICE.size].rstrip(b"\0").decode(
                "ascii", "replace") or "?"
        raise _mismatch(name, kind_label(got, saved),
                        kind_label(kind, device))
    if n != len(data) - off:
        raise error(CorruptError, "%s: state says %d payload bytes, "
                    "holds %d" % (name, n, len(data) - off))
    return data[off:]


def _mismatch(name, saved, live):
    return error(MismatchError, "%s: checkpoint holds a %s state, the "
                 "live generator is a %s; nothing restored"
                 % (name, saved, live))


def _fixed(name, label, payload, size):
    if len(payload) != size:
        raise _bad(name, label, "payload is %d bytes, version 1 is %d"
                   % (len(payload), size))


def _flag(name, label, field, value):
    if value > 1:
        raise _bad(name, label, "%s is %d, expected 0 or 1" % (field, value))


def _at_most(name, label, field, value, top):
    if value > top:
        raise _bad(name, label, "%s is %d, at most %d" % (field, value, top))


# ---- NumPy ---------------------------------------------------------------

def numpy_kind(state):
    """The kind of a bit generator's .state (or RandomState's
    get_state(legacy=False)); None for an unsupported bit generator."""
    entry = _NUMPY.get(state.get("bit_generator"))
    if entry is None:
        return None
    return entry[0] | (RANDOM_STATE if "has_gauss" in state else 0)


def numpy_names():
    return tuple(_NUMPY)


def _numpy_fields(bg, state):
    s = state["state"]
    if bg in ("PCG64", "PCG64DXSM"):
        return (s["state"] & _M64, s["state"] >> 64, s["inc"] & _M64,
                s["inc"] >> 64, state["has_uint32"], state["uinteger"])
    if bg == "MT19937":
        return tuple(int(k) for k in s["key"]) + (s["pos"],)
    if bg == "Philox":
        return (tuple(int(c) for c in s["counter"])
                + tuple(int(k) for k in s["key"])
                + tuple(int(b) for b in state["buffer"])
                + (state["buffer_pos"], state["has_uint32"],
                   state["uinteger"]))
    return tuple(int(x) for x in s["state"]) + (state["has_uint32"],
                                                  state["uinteger"])


def _numpy_state(name, label, bg, v):
    """numpy's .state dict from the checked fields v."""
    if bg in ("PCG64", "PCG64DXSM"):
        if not v[2] & 1:
            raise _bad(name, label, "inc is even (a PCG increment is odd)")
        _flag(name, label, "has_uint32", v[4])
        return {"bit_generator": bg,
                "state": {"state": v[0] | v[1] << 64,
                          "inc": v[2] | v[3] << 64},
                "has_uint32": v[4], "uinteger": v[5]}
    if bg == "MT19937":
        _at_most(name, label, "pos", v[624], 624)
        return {"bit_generator": bg,
                "state": {"key": list(v[:624]), "pos": v[624]}}
    if bg == "Philox":
        _at_most(name, label, "buffer_pos", v[10], 4)
        _flag(name, label, "has_uint32", v[11])
        return {"bit_generator": bg,
                "state": {"counter": list(v[0:4]), "key": list(v[4:6])},
                "buffer": list(v[6:10]), "buffer_pos": v[10],
                "has_uint32": v[11], "uinteger": v[12]}
    _flag(name, label, "has_uint32", v[4])
    return {"bit_generator": bg, "state": {"state": list(v[:4])},
            "has_uint32": v[4], "uinteger": v[5]}


def encode_numpy(state):
    kind = numpy_kind(state)
    bg = state["bit_generator"]
    payload = _NUMPY[bg][1].pack(*_numpy_fields(bg, state))
    if kind & RANDOM_STATE:
        has = int(state["has_gauss"])
        payload += _GAUSS.pack(has, float(state["gauss"]) if has else 0.0)
    return _frame(kind, payload)


def decode_numpy(name, data, kind):
    """The state dict to set on a live generator of kind."""
    payload = _unframe(name, data, kind)
    label = kind_label(kind)
    bg = next(b for b, e in _NUMPY.items()
              if e[0] == kind & ~RANDOM_STATE)
    body = _NUMPY[bg][1]
    extra = _GAUSS.size if kind & RANDOM_STATE else 0
    _fixed(name, label, payload, body.size + extra)
    state = _numpy_state(name, label, bg, body.unpack_from(payload))
    if extra:
        has, gauss = _GAUSS.unpack_from(payload, body.size)
        _flag(name, label, "has_gauss", has)
        if not has and gauss != 0.0:
            raise _bad(name, label, "gauss is set while has_gauss is 0")
        state["has_gauss"], state["gauss"] = has, gauss
    return state


# ---- random.Random ---------------------------------------------------------

def encode_random(state, name):
    return _frame(RANDOM, _enc.python_body(state, name))


def decode_random(name, data):
    payload = _unframe(name, data, RANDOM)
    _fixed(name, kind_label(RANDOM), payload, _enc.PY_BODY_SIZE)
    return _enc.python_state(name, payload)


# ---- torch.Generator ------------------------------------------------------

def torch_kind(device):
    return TORCH_CUDA if device == "cuda" else TORCH_RAW


def _cuda_fields(name, raw):
    """(seed, offset) of a CUDA generator state in either torch form."""
    if len(raw) == CUDA_NEW_SIZE:
        return _CUDA.unpack(raw)
    if len(raw) == CUDA_OLD_SIZE:
        return _CUDA.unpack_from(raw, len(_CUDA_OLD_FILL))
    raise error(MismatchError, "%s: a CUDA generator state of %d bytes; "
                "rngsnap knows torch's %d-byte (<= 2.0) and %d-byte "
                "(>= 2.1) forms" % (name, len(raw), CUDA_OLD_SIZE,
                                         CUDA_NEW_SIZE))


def cuda_state_as(name, raw, live_raw):
    """raw, a CUDA generator state in either torch form, in the form of
    live_raw (the live generator's get_state()): what set_state() takes."""
    seed, offset = _cuda_fields(name, raw)
    _cuda_fields(name, live_raw)  # a form we can write
    new = _CUDA.pack(seed, offset)
    return new if len(live_raw) == CUDA_NEW_SIZE else _CUDA_OLD_FILL + new


def encode_torch(name, device, raw):
    """device: the generator's device type; raw: its get_state() bytes."""
    raw = bytes(raw)
    if device == "cuda":
        return _frame(TORCH_CUDA, _CUDA.pack(*_cuda_fields(name, raw)))
    return _frame(TORCH_RAW, _DEVICE.pack(device.encode("ascii")) + raw)


def _device_tag(name, label, tag):
    text = tag.rstrip(b"\0")
    if (not text or b"\0" in text or not text.isascii()
            or not text.replace(b"_", b"").isalnum() or text.lower() != text):
        raise _bad(name, label, "device type %r is not NUL-padded lowercase "
                   "ASCII" % tag)
    return text.decode("ascii")


def decode_torch(name, data, device, live_raw):
    """The bytes to set_state() on a live generator on device whose
    get_state() is live_raw (its form and size)."""
    kind = torch_kind(device)
    payload = _unframe(name, data, kind, device)
    label = kind_label(kind, device)
    if kind == TORCH_CUDA:
        _fixed(name, label, payload, _CUDA.size)
        seed, offset = _CUDA.unpack(payload)
        if offset >> 63:
            raise _bad(name, label, "offset %d is above 2**63 - 1" % offset)
        if offset % 4:
            raise _bad(name, label, "offset %d is not a multiple of 4"
                       % offset)
        return cuda_state_as(name, _CUDA.pack(seed, offset), live_raw)
    if len(payload) < _DEVICE.size:
        raise _bad(name, label, "payload is %d bytes, shorter than its "
                   "%d-byte device type" % (len(payload), _DEVICE.size))
    saved = _device_tag(name, label, _DEVICE.unpack_from(payload)[0])
    if saved != device:
        raise _mismatch(name, kind_label(kind, saved), label)
    raw = payload[_DEVICE.size:]
    if len(raw) != len(live_raw):
        raise error(MismatchError, "%s: checkpoint holds a %d-byte %s "
                    "state, the live generator's has %d bytes (another "
                    "torch version?)" % (name, len(raw), label,
                                              len(live_raw)))
    return raw
