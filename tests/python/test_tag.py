"""ctx.save(path, tag=) / ctx.load(path, tag=) (issue 22 item 5): a
checkpoint of another tag, of no tag, or a tagged one loaded without
tag= is refused with MismatchError in Python words, and nothing changes:
streams, tracked generators and app states keep their live state."""
import random

import numpy as np
import pytest
import torch

import rngsnap
import rngsnap.torch


def _live(ctx, box):
    return ([s.position() for s in ctx.streams()], box[:],
            torch.get_rng_state().numpy().tobytes(),
            np.random.get_state()[1].tobytes(), random.getstate())


@pytest.fixture
def job(tmp_path):
    box = [b"saved"]
    ctx = rngsnap.Context()
    ctx.seed_all(3)
    rngsnap.torch.track(ctx)
    ctx.register_state("box", save=lambda: box[0],
                       load=lambda b: box.__setitem__(0, bytes(b)))
    yield ctx, box, str(tmp_path / "rng.rngsnap")
    ctx.close()


def _moved(ctx, box):
    ctx.stream("cpu", 0, "dropout").generate("u32", 5)
    torch.rand(3), np.random.rand(2), random.random()
    box[0] = b"live"


def test_same_tag_loads(job):
    ctx, box, path = job
    ctx.save(path, tag=7)
    want = _live(ctx, box)
    _moved(ctx, box)
    ctx.load(path, tag=7)
    assert _live(ctx, box) == want
    ctx.save(path, replace=True, tag="epoch-2")
    ctx.load(path, tag="epoch-2")


@pytest.mark.parametrize("saved,given,words", [
    (5, 4, "saved with tag=5, not 4: it and the job's other file were "
           "written at different steps"),
    (5, "5", "saved with tag=5, not '5'"),
    (None, 4, "the checkpoint has no tag (saved by ctx.save() without "
              "tag=), so nothing ties it to tag=4"),
    (5, None, "the checkpoint was saved with tag=5 to pair it with the "
              "job's other file; pass that file's tag, ctx.load(path, "
              "tag=...)"),
])
def test_another_tag_is_refused_and_nothing_changes(job, saved, given,
                                                     words):
    ctx, box, path = job
    ctx.save(path, tag=saved)
    _moved(ctx, box)
    before = _live(ctx, box)
    with pytest.raises(rngsnap.MismatchError) as e:
        ctx.load(path, tag=given)
    assert words in str(e.value) and "nothing restored" in str(e.value)
    assert str(e.value).startswith("ctx.load(%r" % path)
    assert "callback" not in str(e.value)  # Python words, not C's
    assert _live(ctx, box) == before
    # the tag is registered for one call only: a plain save/load is plain
    other = path + ".plain"
    ctx.save(other)
    ctx.load(other)


def test_tag_must_be_int_or_str(job):
    ctx, _, path = job
    for bad in (1.5, True, b"x"):
        with pytest.raises(TypeError, match="tag must be an int or a str"):
            ctx.save(path, tag=bad)
    ctx.save(path)  # nothing was left registered by the refusals
