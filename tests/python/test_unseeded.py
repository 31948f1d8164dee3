"""A context never seeded nor loaded (issue 22, item 1): its streams once
all sat at Philox (0, 0, 0), so cpu:0/default, dropout and augment drew
the same numbers and derived the same keys.  Now draws and keys are
refused in Python words, and even a checkpoint saved before any seeding
loads into streams that all differ."""
import itertools

import pytest

import rngsnap

WHY = ("refused: the context has been neither seeded nor loaded, so no "
       "seed was chosen for this run (call ctx.seed_all() with the run's "
       "seed first, or ctx.load(), ctx.load_state_dict(), ctx.load_bytes() "
       "or ctx.load_ranks(), whichever this job resumes with, to resume a "
       "checkpoint)")


def _pairs_differ(ctx):
    streams = ctx.streams()
    assert len(streams) >= 3
    words = [s.generate("u32", 8).tobytes() for s in streams]
    keys = [s.derive(3, 4).generate("u32", 8).tobytes() for s in streams]
    for i, j in itertools.combinations(range(len(streams)), 2):
        assert words[i] != words[j], (streams[i], streams[j])
        assert keys[i] != keys[j], (streams[i], streams[j])


def test_unseeded_draw_is_refused():
    with rngsnap.Context() as ctx:
        s = ctx.stream("cpu", 0, "dropout")
        with pytest.raises(rngsnap.OrderError) as e:
            s.generate("f32", 4)
        assert str(e.value) == "s.generate() on stream cpu:0/dropout " + WHY
        with pytest.raises(rngsnap.OrderError) as e:
            s.derive(1, 2)
        assert str(e.value) == "s.derive() on stream cpu:0/dropout " + WHY
        with pytest.raises(rngsnap.OrderError):
            s.reserve(4)
        ctx.seed_all(7)
        _pairs_differ(ctx)


def test_checkpoint_saved_unseeded_loads_apart(tmp_path):
    with rngsnap.Context(untracked="ignore") as a:
        a.save(str(tmp_path / "c"))
    with rngsnap.Context(untracked="ignore") as r:
        r.load(str(tmp_path / "c"))
        _pairs_differ(r)
