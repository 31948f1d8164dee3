"""Streams: generate into new arrays and existing buffers, reserve,
position, the buffer checks."""
import array

import numpy as np
import pytest

import rngsnap

DTYPES = {"u32": np.uint32, "u64": np.uint64, "f32": np.float32,
          "f64": np.float64, "normal_f32": np.float32,
          "normal_f64": np.float64, "curand_uniform_f32": np.float32,
          "curand_uniform_f64": np.float64, "curand_normal_f32": np.float32,
          "curand_normal_f64": np.float64}


def test_every_dist_array_and_out_agree(ctx):
    for dist, dtype in DTYPES.items():
        s = ctx.stream("cpu", 0, "dropout")
        start = s.position()
        a = s.generate(dist, 101)
        assert a.dtype == dtype and a.shape == (101,)
        end = s.position()
        # the same words again, into a buffer: same values
        seed, sub, off = start
        ctx2 = rngsnap.Context()
        ctx2.seed_all(1234)
        s2 = ctx2.stream("cpu", 0, "dropout")
        s2.reserve(off)
        out = np.empty(101, dtype)
        assert s2.generate(dist, out=out) is out
        assert out.tobytes() == a.tobytes(), dist
        assert s2.position() == end
        ctx2.close()
    assert rngsnap.DISTS == tuple(DTYPES)


def test_uniform_range_and_reserve(ctx):
    s = ctx.stream("cpu", 0, "default")
    f = s.generate("f64", 10000)
    assert f.min() >= 0.0 and f.max() < 1.0
    seed, sub, off = s.reserve(7)
    assert (sub, off) == (0, 20000)
    assert s.position() == (seed, 0, 20007)
    # reserve(0) only reports
    assert s.reserve(0) == s.position()


def test_out_buffer_checks(ctx):
    s = ctx.stream("cpu", 0, "default")
    before = s.position()
    with pytest.raises(TypeError, match="read-only"):
        s.generate("u32", out=bytes(16))
    with pytest.raises(TypeError, match="buffer protocol"):
        s.generate("u32", out=[0, 0, 0])
    with pytest.raises(ValueError, match="C-contiguous"):
        s.generate("u32", out=np.zeros((4, 4), np.uint32)[:, 1])
    with pytest.raises(TypeError, match="items of 4 bytes"):
        s.generate("u64", out=np.zeros(4, np.uint32))
    with pytest.raises(ValueError, match="byte order"):
        s.generate("f32", out=np.zeros(4, ">f4"))
    with pytest.raises(ValueError, match="unknown dist"):
        s.generate("f16", 4)
    with pytest.raises(ValueError, match="out holds 4"):
        s.generate("u32", 5, out=np.zeros(4, np.uint32))
    with pytest.raises(TypeError, match="needs n or out"):
        s.generate("u32")
    assert s.position() == before  # nothing drawn by a refused call
    # any writable C-contiguous buffer of the right itemsize works
    buf = array.array("I", [0] * 8)
    s.generate("u32", out=buf)
    assert any(buf)
    assert s.generate("u32", 0).shape == (0,)


def test_stream_names_and_unknown(ctx):
    s = ctx.stream("cpu", 0, "augment")
    assert (s.backend, s.device, s.name) == ("cpu", 0, "augment")
    assert repr(s) == "<rngsnap.Stream cpu:0/augment>"
    assert [x.name for x in ctx.streams()] == ["default", "dropout",
                                               "augment"]
    with pytest.raises(rngsnap.InvalidError) as e:
        ctx.stream("cpu", 0, "nope")
    assert e.value.code == 9 and e.value.name == "RNGSNAP_E_INVALID"
    assert "no stream cpu:0/nope" in str(e.value)


def test_rank_properties(ctx):
    assert (ctx.rank, ctx.world_size) == (0, 1)
    ctx.set_rank(2, 4)
    assert (ctx.rank, ctx.world_size) == (2, 4)
    with pytest.raises(rngsnap.InvalidError):
        ctx.set_rank(4, 4)
