"""Layer core: what the divergence ledger digests of each generator, fast
(docs/python.md, "The divergence ledger").

A ledger step digests every app state.  The saved encodings (the save
callables) cost 20 to 300 us for NumPy's and Python's global generators,
more than a step may spend, so each tracked or registered generator also
gives the ledger a cheaper reader: bytes that change exactly when its
state changes, never written to a checkpoint.  The raw-memory readers are
checked once against the generator's documented state; where that check
fails (another interpreter, another NumPy) the saved encoding is used.
"""
import ctypes
import struct

_MT_WORDS = 624


def torch_raw(get):
    """A torch generator's state tensor as bytes (get: its get_state)."""
    return lambda: get().numpy().tobytes()


def _mt19937(bg):
    """Reader of an MT19937 bit generator's 624 words and position, from
    its C struct (mt19937_state: uint32 key[624], int pos), or None."""
    try:
        addr = bg.ctypes.state_address
        st = bg.state["state"]
        raw = ctypes.string_at(addr, 4 * _MT_WORDS + 4)
        ok = (list(struct.unpack("<%dI" % _MT_WORDS, raw[:-4]))
              == [int(k) for k in st["key"]]
              and struct.unpack("<i", raw[-4:])[0] == int(st["pos"]))
    except Exception:  # not MT19937, no ctypes: the slow reader
        return None
    return (lambda: ctypes.string_at(addr, 4 * _MT_WORDS + 4)) if ok else None


def numpy_legacy(rs, fallback):
    """A RandomState (np.random's global one): its Mersenne Twister words
    and position.  The cached second Gaussian of legacy normal draws is
    not covered (NumPy keeps it out of reach); every draw that uses it
    also moves the words."""
    bg = getattr(rs, "_bit_generator", None)
    return (bg is not None and _mt19937(bg)) or fallback


def _random_offset(r):
    """Byte offset of CPython's RandomObject fields (int index; uint32
    state[624]) inside r, checked against r.getstate(), or None."""
    if not isinstance(getattr(r, "gauss_next", None), (float, type(None))):
        return None
    try:
        version, words, _ = r.getstate()
        want = struct.pack("<i%dI" % _MT_WORDS, words[-1], *words[:-1])
        for off in (16, 24, 32):  # PyObject_HEAD on 64-bit builds
            if ctypes.string_at(id(r) + off, len(want)) == want:
                return off
    except Exception:
        pass
    return None


def python_random(r, fallback):
    """A random.Random: its Mersenne Twister words, index and gauss_next."""
    off = _random_offset(r)
    if off is None:
        return fallback
    size = 4 + 4 * _MT_WORDS

    def read():
        g = r.gauss_next
        return ctypes.string_at(id(r) + off, size) + (
            b"-" if g is None else struct.pack("<d", g))
    return read
