"""ctx.set_coords(**coords) and ctx.coords (issue 32, item 3;
docs/python.md, "Parallel coordinates: ctx.set_coords"): the canonical
form read back as a read-only dict, clearing, and every refusal in
Python's words: what only Python can get wrong (a value that is not an
int, a bool, a negative value) checked by the package, the rest by the
core with its message under the Python name; nothing changes after a
refusal.  From one of the context's own callables and in a fork() child
the call is refused too.  The multi-rank checks of the coordinates are
in test_nodes_ranks.py."""
import os
import pickle
import traceback

import numpy as np
import pytest

import rngsnap

CALL = "ctx.set_coords(...)"


def test_set_read_and_clear(ctx):
    assert ctx.coords == {}
    ctx.set_coords(tp=1, dp=3, pp=0, ep=2)
    assert dict(ctx.coords) == {"dp": 3, "ep": 2, "pp": 0, "tp": 1}
    assert list(ctx.coords) == ["dp", "ep", "pp", "tp"]  # sorted by name
    ctx.set_coords(dp=np.int64(7), expert_1=2**31 - 1)  # any __index__ int
    assert dict(ctx.coords) == {"dp": 7, "expert_1": 2**31 - 1}
    assert type(ctx.coords["dp"]) is int
    ctx.set_coords()
    assert ctx.coords == {}


def test_coords_are_read_only(ctx):
    ctx.set_coords(dp=1)
    with pytest.raises(TypeError):
        ctx.coords["dp"] = 2
    with pytest.raises(AttributeError):
        ctx.coords = {"dp": 2}
    assert dict(ctx.coords) == {"dp": 1}


@pytest.mark.parametrize("kw, cls, message", [
    ({"dp": "3"}, TypeError,
     "ctx.set_coords(...): dp='3' is a str; a coordinate is an int "
     "(e.g. dp=3)"),
    ({"dp": True}, TypeError,
     "ctx.set_coords(...): dp=True is a bool; a coordinate is an int "
     "(e.g. dp=3)"),
    ({"tp": 1.0}, TypeError,
     "ctx.set_coords(...): tp=1.0 is a float; a coordinate is an int "
     "(e.g. dp=3)"),
    ({"dp": None}, TypeError,
     "ctx.set_coords(...): dp=None is a NoneType; a coordinate is an int "
     "(e.g. dp=3)"),
    ({"dp": -1}, rngsnap.InvalidError,
     "ctx.set_coords(...): dp=-1 is negative; a coordinate is an int in "
     "0 .. 2**31 - 1"),
    ({"dp": 2**31}, rngsnap.InvalidError,
     'ctx.set_coords(...): coordinates "dp=2147483648": pair 1 '
     '"dp=2147483648": a value is a decimal number 0..2147483647'),
    ({"DP": 3}, rngsnap.InvalidError,
     'ctx.set_coords(...): coordinates "DP=3": pair 1 "DP=3": a name '
     'starts with a letter a-z'),
    ({"_dp": 3}, rngsnap.InvalidError,
     'ctx.set_coords(...): coordinates "_dp=3": pair 1 "_dp=3": a name '
     'starts with a letter a-z'),
    ({"data_parallel_x": 1, "d" * 16: 1}, rngsnap.InvalidError,
     'ctx.set_coords(...): coordinates "data_parallel_x=1,dddddddddddddddd'
     '=1": pair 2 "dddddddddddddddd=1": a name has 1 to 15 characters'),
    ({chr(ord("a") + i): i for i in range(17)}, rngsnap.InvalidError,
     'ctx.set_coords(...): coordinates "%s,...": more than 16 pairs'
     % ",".join("%s=%d" % (chr(ord("a") + i), i) for i in range(16))),
])
def test_refusals(ctx, kw, cls, message):
    ctx.set_coords(pp=4, dp=2)
    with pytest.raises(cls) as e:
        ctx.set_coords(**kw)
    assert type(e.value) is cls
    assert str(e.value) == message
    if cls is rngsnap.InvalidError:
        assert e.value.name == "RNGSNAP_E_INVALID"
    assert dict(ctx.coords) == {"dp": 2, "pp": 4}  # nothing changed


def test_positional_refused(ctx):
    with pytest.raises(TypeError):
        ctx.set_coords({"dp": 1})
    assert ctx.coords == {}


def test_from_a_callable_and_closed(tmp_path):
    seen = []

    def save():
        try:
            c.set_coords(dp=9)
        except rngsnap.InvalidError as e:
            seen.append(str(e))
        return b"1"
    c = rngsnap.Context(untracked="ignore")
    c.seed_all(1)
    c.set_coords(dp=1)
    c.register_state("s", save=save, load=lambda d: None)
    c.save(str(tmp_path / "ck"))
    assert seen == ["rngsnap.Context used from inside one of its own "
                    "save/load callables or collectives (the context is "
                    "locked while they run)"]
    assert dict(c.coords) == {"dp": 1}
    c.close()
    for call in (lambda: c.set_coords(dp=2), lambda: c.coords):
        with pytest.raises(rngsnap.InvalidError) as e:
            call()
        assert str(e.value) == "rngsnap.Context is closed"


def _in_child(body):
    """body() in a fork() child: ("ok", its value) or ("raised", class
    name, message, traceback)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = ("ok", body())
        except BaseException as e:
            out = ("raised", type(e).__name__, str(e), traceback.format_exc())
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = pickle.load(f)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return out


def test_in_a_fork_child(ctx):
    ctx.set_coords(dp=1)

    def child():
        try:
            ctx.set_coords(dp=2)
        except rngsnap.OrderError as e:
            return str(e), dict(ctx.coords)
        return "not refused", dict(ctx.coords)
    got = _in_child(child)
    assert got == ("ok", (
        "ctx.set_coords(...) refused: this process is a fork() child of "
        "the process that opened the context, whose saves and loads are "
        "refused here, so coordinates set here would never be recorded "
        "nor checked. Set them in the process that opened the context",
        {"dp": 1})), got
    ctx.set_coords(dp=3)  # the parent's own context: allowed
    assert dict(ctx.coords) == {"dp": 3}
