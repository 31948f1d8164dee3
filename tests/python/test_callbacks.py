"""App-state callables: kept alive, exceptions re-raised as the Error's
__cause__ with their traceback, the load rolled back."""
import gc
import traceback

import pytest

import rngsnap

from collectives import LinkDown, OneRank


def test_callables_kept_alive(ctx, tmp_path):
    box = {"v": b"state-1"}

    def make():  # only the context holds these closures
        return (lambda: box["v"]), (lambda b: box.__setitem__("v", b))

    save, load = make()
    ctx.register_state("app", save=save, load=load)
    del save, load
    gc.collect()
    ctx.save(tmp_path / "a")
    box["v"] = b"changed"
    ctx.load(tmp_path / "a")
    assert box["v"] == b"state-1"


def test_load_exception_rolls_back(ctx, tmp_path):
    good = {"v": b"good-saved"}
    calls = []

    def bad_load(b):
        calls.append(b)
        if len(calls) == 1:
            raise ValueError("cannot take these bytes")

    ctx.register_state("good", save=lambda: good["v"],
                       load=lambda b: good.__setitem__("v", b))
    ctx.register_state("bad", save=lambda: b"bad-state", load=bad_load)
    s = ctx.stream("cpu", 0, "dropout")
    ctx.save(tmp_path / "a")
    s.generate("u32", 50)
    good["v"] = b"live"
    before = s.position()
    with pytest.raises(rngsnap.Error) as e:
        ctx.load(tmp_path / "a")
    cause = e.value.__cause__
    assert isinstance(cause, ValueError)
    assert str(cause) == "cannot take these bytes"
    frames = [f.name for f in traceback.extract_tb(cause.__traceback__)]
    assert "bad_load" in frames
    assert "its load callable failed" in str(e.value) \
        and "rolled back" in str(e.value)
    # rolled back: streams and the app state that loaded first unchanged
    assert s.position() == before
    assert good["v"] == b"live"
    # the failing state got its own backup back (rollback), after the file
    assert calls == [b"bad-state", b"bad-state"]


def test_save_exception_and_non_bytes(ctx, tmp_path):
    def boom():
        raise KeyError("no sampler yet")

    ctx.register_state("app", save=boom, load=lambda b: None)
    with pytest.raises(rngsnap.Error) as e:
        ctx.save(tmp_path / "a")
    assert isinstance(e.value.__cause__, KeyError)
    assert not (tmp_path / "a").exists()

    c2 = rngsnap.Context()
    c2.register_state("app", save=lambda: "not bytes", load=lambda b: None)
    with pytest.raises(rngsnap.Error) as e:
        c2.save(tmp_path / "b")
    assert isinstance(e.value.__cause__, TypeError)
    assert "expected bytes" in str(e.value.__cause__)
    assert not (tmp_path / "b").exists()
    c2.close()


def test_save_called_once_per_pair(ctx, tmp_path):
    n = {"save": 0}

    def save():
        n["save"] += 1
        return b"abc"

    ctx.register_state("app", save=save, load=lambda b: None)
    ctx.save(tmp_path / "a")
    assert n["save"] == 1
    # a later success leaves no exception from an earlier failure behind
    ctx.save(tmp_path / "a", replace=True)
    assert n["save"] == 2


def test_register_checks(ctx):
    with pytest.raises(TypeError):
        ctx.register_state("x", save=b"", load=print)
    ctx.register_state("x", save=bytes, load=print)
    with pytest.raises(rngsnap.InvalidError):
        ctx.register_state("x", save=bytes, load=print)  # duplicate name


def test_collective_exception_fails_the_call(ctx, tmp_path):
    d = tmp_path / "ck"
    with pytest.raises(rngsnap.Error) as e:
        ctx._save_ranks(d, LinkDown(), 0, 1, False)
    assert isinstance(e.value.__cause__, ConnectionError)
    assert e.value.name == "RNGSNAP_E_BACKEND"
    assert not (d / "MANIFEST").exists()
    # the same calls with working collectives: a resume of one rank
    s = ctx.stream("cpu", 0, "dropout")
    ctx._save_ranks(d, OneRank(), 0, 1, True)
    a = s.generate("u64", 5)
    ctx._load_ranks(d, OneRank(), 0, 1, False)
    assert (s.generate("u64", 5) == a).all()


def test_callable_calling_back_into_its_context(ctx, tmp_path):
    # The context is locked while callables run: a call back into it is
    # refused (Error), not a deadlock, and fails the save.
    s = ctx.stream("cpu", 0, "default")
    ctx.register_state("app", save=lambda: bytes(s.generate("u32", 1)),
                       load=lambda b: None)
    with pytest.raises(rngsnap.Error) as e:
        ctx.save(tmp_path / "a")
    assert isinstance(e.value.__cause__, rngsnap.InvalidError)
    assert "inside one of its own" in str(e.value.__cause__)
    assert not (tmp_path / "a").exists()
    s.generate("u32", 1)  # usable again afterwards
