"""Drawn before restore (issue 10 item 3): in a context opened with
resume=True, ctx.load refuses with OrderError naming the generator when a
tracked generator was used between rngsnap.torch.track() and load(), and
changes nothing: no generator, no stream, no app state."""
import random

import numpy as np
import pytest
import torch

import rngsnap
import rngsnap.torch


def _states():
    kind, key, *rest = np.random.get_state()
    return (torch.get_rng_state().numpy().tobytes(), key.tobytes(), rest,
            random.getstate())


@pytest.fixture
def checkpoint(tmp_path):
    path = str(tmp_path / "ck.rngsnap")
    with rngsnap.Context() as ctx:
        ctx.seed_all(3)
        rngsnap.torch.track(ctx)  # after seed_all: seeds them (derived)
        torch.manual_seed(3)  # the states the checkpoint holds
        np.random.seed(3)
        random.seed(3)
        ctx.register_state("job", save=lambda: b"saved", load=lambda b: None)
        ctx.save(path)
    torch.rand(4)  # the live states move on: a load must be visible
    np.random.rand(4)
    random.random()
    return path


def _resumed(loads):
    ctx = rngsnap.Context(resume=True)
    tracker = rngsnap.torch.track(ctx)
    ctx.register_state("job", save=lambda: b"live", load=loads.append)
    return ctx, tracker


@pytest.mark.parametrize("draw,names", [
    (lambda: torch.rand(1), ["torch.cpu"]),
    (lambda: np.random.randint(10), ["numpy.global"]),
    (lambda: random.random(), ["python.random"]),
    (lambda: (torch.randn(2), random.gauss(0, 1)),
     ["torch.cpu", "python.random"]),
], ids=["torch", "numpy", "random", "two"])
def test_draw_between_track_and_load_is_refused(checkpoint, draw, names):
    loads = []
    ctx, _ = _resumed(loads)
    draw()
    before = _states()
    with pytest.raises(rngsnap.OrderError) as e:
        ctx.load(checkpoint)
    msg = str(e.value)
    assert "nothing restored" in msg
    for n in ["torch.cpu", "numpy.global", "python.random"]:
        assert (n in msg) == (n in names), msg
    assert e.value.code == 8 and e.value.name == "RNGSNAP_E_ORDER"
    assert _states() == before  # nothing changed
    assert loads == []          # no app state loaded
    # Still awaiting its load: the core's gate refuses draws.
    with pytest.raises(rngsnap.OrderError):
        ctx.stream("cpu", 0, "default").generate("u32", 1)
    ctx.close()


def test_dataloader_iterator_before_load_is_refused(checkpoint):
    """The transformers bug: iter(DataLoader) draws its base seed from
    torch's default generator before the restore."""
    ctx, _ = _resumed([])
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2)
    next(iter(loader))
    with pytest.raises(rngsnap.OrderError, match="torch.cpu"):
        ctx.load(checkpoint)
    ctx.close()


def test_no_draw_loads_and_then_draws_are_free(checkpoint):
    loads = []
    ctx, _ = _resumed(loads)
    ctx.load(checkpoint)
    assert loads == [b"saved"]
    ctx.load(checkpoint)  # again before any draw: harmless
    torch.rand(3)  # after the load: allowed
    drawn = _states()
    # A second load now would rewind torch.cpu (issue 22 item 4): refused,
    # changing nothing (test_reseed.py has the rest).
    with pytest.raises(rngsnap.OrderError, match="torch.cpu"):
        ctx.load(checkpoint)
    assert _states() == drawn
    assert loads == [b"saved", b"saved"]
    ctx.close()


def test_failed_load_then_retry(checkpoint, tmp_path):
    """A load that fails for another reason leaves the check armed."""
    ctx, _ = _resumed([])
    with pytest.raises(rngsnap.Error):
        ctx.load(str(tmp_path / "missing.rngsnap"))
    torch.rand(1)
    with pytest.raises(rngsnap.OrderError, match="torch.cpu"):
        ctx.load(checkpoint)
    ctx.close()


def test_not_resumed_context_does_not_check(checkpoint):
    with rngsnap.Context() as ctx:
        rngsnap.torch.track(ctx)
        ctx.register_state("job", save=lambda: b"x", load=lambda b: None)
        torch.rand(1)
        ctx.load(checkpoint)


def test_check_order_early_refuses_a_draw(checkpoint):
    """Tracker.check_order(): the load's check where a framework's own
    restore begins (accelerate's load_state pre-hook)."""
    loads = []
    ctx, tracker = _resumed(loads)
    torch.rand(1)
    before = _states()
    with pytest.raises(rngsnap.OrderError) as e:
        tracker.check_order()
    assert str(e.value).startswith(
        "load refused, nothing restored: generator torch.cpu changed between "
        "rngsnap.torch.track() and load()")
    assert _states() == before and loads == []
    with pytest.raises(rngsnap.OrderError, match="torch.cpu"):  # still armed
        ctx.load(checkpoint)
    ctx.close()


def test_check_order_then_the_framework_restores_then_load(checkpoint):
    """After check_order() passed, a framework's own restore of the same
    generators (they move) does not refuse the load that follows it; the
    load puts every state back, and the core's gate held draws until then."""
    torch.manual_seed(3)  # the states the checkpoint holds
    np.random.seed(3)
    random.seed(3)
    want = _states()
    loads = []
    ctx, tracker = _resumed(loads)
    tracker.check_order()
    torch.manual_seed(77)  # the framework's restore: other states
    np.random.seed(77)
    with pytest.raises(rngsnap.OrderError):  # the gate: no draws yet
        ctx.stream("cpu", 0, "default").generate("u32", 1)
    ctx.load(checkpoint)
    assert loads == [b"saved"] and _states() == want
    ctx.close()
