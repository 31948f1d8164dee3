"""The pickle-free encodings of rngsnap.torch's states (docs/python.md,
"Encodings"): each round-trips exactly, and every malformed input is an
rngsnap error naming the state, never a crash or a silent restore."""
import random
import struct

import numpy as np
import pytest
import torch

import rngsnap
from rngsnap._core import encoding as enc
from rngsnap._core import fingerprint as fp


def _np_state():
    rs = np.random.RandomState(11)
    rs.standard_normal(3)  # odd count: a cached Gaussian is part of it
    return rs.get_state()


def _py_state():
    r = random.Random(5)
    r.gauss(0, 1)  # leaves gauss_next set
    return r.getstate()


def test_numpy_round_trip_with_cached_gaussian():
    st = _np_state()
    assert st[3] == 1
    data = enc.encode_numpy(st)
    assert data[:5] == b"RSNP\x01" and len(data) == 2520
    back = enc.decode_numpy("numpy.global", data)
    assert back[0] == "MT19937" and list(back[1]) == list(st[1])
    assert back[2:] == st[2:]
    a, b = np.random.RandomState(), np.random.RandomState()
    a.set_state(st)
    b.set_state(back)
    assert a.standard_normal(5).tobytes() == b.standard_normal(5).tobytes()


def test_python_round_trip_with_gauss_next():
    st = _py_state()
    assert st[2] is not None
    data = enc.encode_python(st)
    assert data[:5] == b"RSPY\x01" and len(data) == 2520
    assert enc.decode_python("python.random", data) == st
    st2 = random.Random(3).getstate()  # gauss_next None
    assert enc.decode_python("python.random", enc.encode_python(st2)) == st2


def test_torch_round_trip():
    raw = torch.get_rng_state().numpy().tobytes()
    data = enc.encode_torch(raw)
    assert data[:5] == b"RSTG\x01"
    assert enc.decode_torch("torch.cpu", data, len(raw)) == raw


CASES = [
    ("numpy.global", lambda: enc.encode_numpy(_np_state()),
     lambda d: enc.decode_numpy("numpy.global", d)),
    ("python.random", lambda: enc.encode_python(_py_state()),
     lambda d: enc.decode_python("python.random", d)),
    ("torch.cpu", lambda: enc.encode_torch(bytes(range(256)) * 4),
     lambda d: enc.decode_torch("torch.cpu", d, 1024)),
]


@pytest.mark.parametrize("name,make,decode", CASES, ids=[c[0] for c in CASES])
def test_every_truncation_is_corrupt(name, make, decode):
    data = make()
    for n in range(len(data)):
        with pytest.raises(rngsnap.CorruptError, match=name):
            decode(data[:n])
    with pytest.raises(rngsnap.CorruptError, match=name):
        decode(data + b"\0")


@pytest.mark.parametrize("name,make,decode", CASES, ids=[c[0] for c in CASES])
def test_unknown_version_magic_and_reserved(name, make, decode):
    data = make()
    with pytest.raises(rngsnap.MismatchError, match=name + ".*version 2"):
        decode(data[:4] + b"\x02" + data[5:])
    with pytest.raises(rngsnap.CorruptError, match="magic"):
        decode(b"XXXX" + data[4:])
    with pytest.raises(rngsnap.CorruptError, match="reserved"):
        decode(data[:6] + b"\x01" + data[7:])
    with pytest.raises(rngsnap.CorruptError, match="not bytes"):
        decode("a str")


def test_out_of_range_fields_are_corrupt():
    d = bytearray(enc.encode_numpy(_np_state()))
    struct.pack_into("<I", d, 8 + 624 * 4, 625)  # pos past the key
    with pytest.raises(rngsnap.CorruptError, match="position 625"):
        enc.decode_numpy("numpy.global", bytes(d))
    d = bytearray(enc.encode_python(_py_state()))
    struct.pack_into("<I", d, 8 + 625 * 4, 2)  # has_gauss 2
    with pytest.raises(rngsnap.CorruptError, match="has_gauss 2"):
        enc.decode_python("python.random", bytes(d))


def test_other_torch_generator_size_is_mismatch():
    data = enc.encode_torch(b"\1" * 16)  # a CUDA-sized state
    with pytest.raises(rngsnap.MismatchError, match="16-byte.*5056"):
        enc.decode_torch("torch.cpu", data, 5056)


def test_fingerprint_round_trip_and_escapes():
    f = {"a": "x=y", "b": "two\nlines \\ and \r", "env.X": "(unset)"}
    data = fp.encode(f)
    assert data.startswith(b"rngsnap-fingerprint 1\na=x=y\n")
    assert fp.decode("rngsnap.fingerprint", data) == f


@pytest.mark.parametrize("bad,cls,what", [
    (b"rngsnap-fingerprint 2\n", rngsnap.MismatchError, "reads"),
    (b"rngsnap-fingerprint 1\nb=1\na=2\n", rngsnap.CorruptError, "sorted"),
    (b"rngsnap-fingerprint 1\nnoequals\n", rngsnap.CorruptError, "key=value"),
    (b"rngsnap-fingerprint 1\na=\\q\n", rngsnap.CorruptError, "escape"),
    (b"rngsnap-fingerprint 1\na=1", rngsnap.CorruptError, "newline"),
    (b"\xff\n", rngsnap.CorruptError, "UTF-8"),
    (b"hello\n", rngsnap.CorruptError, "first line"),
])
def test_fingerprint_malformed(bad, cls, what):
    with pytest.raises(cls, match=what):
        fp.decode("rngsnap.fingerprint", bad)


def test_fingerprint_differences_one_line_each():
    d = fp.differences({"a": "1", "b": "2", "c": "3"},
                       {"a": "1", "b": "9", "d": "4"})
    assert d == ["b: checkpoint 2, this process 9",
                 "c: checkpoint 3, this process (absent)",
                 "d: checkpoint (absent), this process 4"]


def test_numpy_gauss_without_has_gauss_is_corrupt():
    # NumPy's get_state() gives 0.0 when no Gaussian is cached: any other
    # value cannot come from encode_numpy (as for python.random).
    d = bytearray(enc.encode_numpy(np.random.RandomState(1).get_state()))
    struct.pack_into("<d", d, 8 + 626 * 4, 0.5)
    with pytest.raises(rngsnap.CorruptError, match="without has_gauss"):
        enc.decode_numpy("numpy.global", bytes(d))


FUZZ = CASES + [
    ("rngsnap.fingerprint",
     lambda: fp.encode({"a": "1", "b": "x\\y\nz", "c": "\u00e9"}),
     lambda d: fp.decode("rngsnap.fingerprint", d)),
]


@pytest.mark.parametrize("name,make,decode", FUZZ, ids=[c[0] for c in FUZZ])
def test_fuzzed_input_raises_only_rngsnap_errors(name, make, decode):
    # Flipped, cut, grown and foreign inputs: an rngsnap Error or a
    # decoded value, never IndexError / struct.error / ValueError.
    data = make()
    rnd = random.Random(7)
    inputs = [b"", b"\0" * 8, data * 2, data + data[:3], bytearray(data),
              memoryview(data)]
    for _ in range(400):
        d = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            d[rnd.randrange(len(d))] = rnd.randrange(256)
        cut = rnd.randrange(len(d) + 1)
        inputs += [bytes(d), bytes(d[:cut]), bytes(d) + bytes(d[cut:])]
    for d in inputs:
        try:
            decode(d)
        except rngsnap.Error as e:
            assert name in str(e)
