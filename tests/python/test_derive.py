"""Stream.derive: keyed streams from Python."""
import numpy as np
import pytest

import rngsnap
from conftest import while_drawing


def test_keyed_stream_pure_and_separate(ctx):
    s = ctx.stream("cpu", 0, "augment")
    k = s.derive(3, 14)
    first = k.generate("u32", 6)
    assert k.position()[2] == 6
    s.generate("f64", 1000)  # drawing on s changes nothing for the key
    again = s.derive(3, 14)
    assert again.position()[2] == 0
    assert (again.generate("u32", 6) == first).all()
    # continues: two calls give the words of one
    k2 = s.derive(3, 14)
    parts = np.concatenate([k2.generate("u32", 2), k2.generate("u32", 4)])
    assert (parts == first).all()
    # another context, same seeding: same words
    with rngsnap.Context() as other:
        other.seed_all(1234)
        o = other.stream("cpu", 0, "augment").derive(3, 14)
        assert (o.generate("u32", 6) == first).all()
    # another key: other words, never s's own subsequence
    assert not (s.derive(14, 3).generate("u32", 6) == first).all()
    assert k.position()[1] != s.position()[1]
    assert k.position()[0] == s.position()[0]


def test_keyed_stream_out_and_parent_untouched(ctx):
    s = ctx.stream("cpu", 0, "dropout")
    before = s.position()
    k = s.derive(1)
    out = np.empty(8, np.float32)
    assert k.generate("normal_f32", out=out) is out
    with pytest.raises(TypeError):
        k.generate("normal_f64", out=out)
    assert k.position()[2] == 8  # the refused call did not move it
    assert s.position() == before


def test_keyed_stream_refuses_two_threads(ctx):
    # A keyed stream is one caller's at a time: a draw from this thread
    # while another thread's draw is inside the C call is refused.
    k = ctx.stream("cpu", 0, "default").derive(9, 9)
    big = np.empty(1 << 24, np.float64)

    def refused():
        try:
            k.generate("u32", 1)
        except RuntimeError as e:
            return str(e)
        return None

    err = while_drawing(lambda: k.generate("normal_f64", out=big), refused)
    assert err is not None and "another thread" in err, err
