"""The divergence ledger from Python (issue 25): ctx.ledger(path),
led.note(name, value), led.step(n), and a fault sweep in-process.

A job (track()'d torch/NumPy/random generators, an rngsnap stream, a
sampler whose position is an app state) runs whole into ledger A; the
resumed job loads the checkpoint of step SAVE into a new context (opened
with resume=True) and writes its own ledger B.  `rngsnap ledger diff A B`
compares the steps both recorded: nothing for an exact resume; for a
re-seed of torch's generator, a sampler skipping one batch, one extra
draw of n words on the stream, or a different noted loss at step k, it
names exactly step k and that entry."""
import json
import os
import random
import struct
import subprocess

import numpy as np
import pytest
import torch

import rngsnap
import rngsnap.torch

RNGSNAP = os.path.join(os.environ["RNGSNAP_BUILD_ROOT"], "tools", "rngsnap")
LAST, SAVE = 9, 3


class Sampler:
    """A resumable batch sampler: its position is its app state."""

    def __init__(self, ctx):
        self.position = 0
        ctx.register_state("sampler", save=self.save, load=self.load)

    def next_batch(self):
        self.position += 1
        return self.position

    def save(self):
        return struct.pack("<Q", self.position)

    def load(self, data):
        (self.position,) = struct.unpack("<Q", data)


def job(ledger, first, fault=None, ckpt=None):
    """Steps first..LAST; saves the checkpoint bytes after step SAVE into
    ckpt (a dict); first > 0 resumes from them."""
    ctx = rngsnap.Context(resume=first > 0)
    rngsnap.torch.track(ctx)
    sampler = Sampler(ctx)
    if first:
        ctx.load_bytes(ckpt["data"])
    else:
        ctx.seed_all(7)
    s = ctx.stream("cpu", 0, "dropout")
    with ctx.ledger(ledger) as led:
        for k in range(first, LAST + 1):
            sampler.next_batch()
            noise = torch.randn(4)
            x = float(np.random.random()) + random.random()
            drop = s.generate("f32", 16)
            kind, at, n = fault or (None, -1, 0)
            if at == k:
                if kind == "reseed":
                    # torch.manual_seed here is refused (rngsnap's re-seed
                    # guard); a library that sets a freshly seeded state
                    # passes it: the ledger still names it
                    torch.set_rng_state(
                        torch.Generator().manual_seed(1234).get_state())
                elif kind == "skip":
                    sampler.next_batch()
                elif kind == "draw":
                    s.generate("u32", n)
            loss = float(noise.sum()) + x + float(drop.sum())
            if kind == "loss" and at == k:
                loss += 1e-12
            led.note("loss", loss)
            led.step(k)
            if k == SAVE and ckpt is not None:
                ckpt["data"] = ctx.save_bytes()
    ctx.close()


def diff(a, b):
    r = subprocess.run([RNGSNAP, "ledger", "diff", str(a), str(b), "--json"],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, json.loads(r.stdout)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    d = tmp_path_factory.mktemp("whole")
    ckpt = {}
    job(str(d / "A.ledger"), 0, ckpt=ckpt)
    return d / "A.ledger", ckpt


def test_exact_resume_matches(whole, tmp_path):
    a, ckpt = whole
    job(str(tmp_path / "B.ledger"), SAVE + 1, ckpt=ckpt)
    rc, res = diff(a, tmp_path / "B.ledger")
    assert (rc, res["result"], res["common_steps"]) == (0, "match",
                                                        LAST - SAVE), res


@pytest.mark.parametrize("kind,entry,n", [
    ("reseed", "torch.cpu", None), ("skip", "sampler", None),
    ("draw", "cpu:0/dropout", 1), ("draw", "cpu:0/dropout", 4096),
    ("loss", "loss", None)])
@pytest.mark.parametrize("k", [SAVE + 1, 6, LAST])
def test_fault_is_named(whole, tmp_path, kind, entry, n, k):
    a, ckpt = whole
    job(str(tmp_path / "B.ledger"), SAVE + 1, (kind, k, n), ckpt)
    rc, res = diff(a, tmp_path / "B.ledger")
    assert rc == 1 and res["first_step"] == k, res
    [d] = res["differences"]
    assert (d["rank"], d["step"]) == (0, k)
    if kind == "loss":
        assert d["kind"] == "compute" and d["entries"] == []
        assert [x["name"] for x in d["notes"]] == ["loss"]
        return
    [e] = d["entries"]
    assert d["kind"] == "rng" and e["entry"] == entry, d
    assert e["last_matched"] == (k - 1 if k > SAVE + 1 else None), e
    if n:
        assert (e["how"], e["words"], e["direction"]) == ("ahead", n,
                                                          "ahead")
    else:
        assert e["how"] == "state"


def test_notes_and_show(tmp_path):
    with rngsnap.Context() as ctx:
        ctx.seed_all(1)
        with ctx.ledger(str(tmp_path / "L")) as led:
            led.note("f", 0.25)
            led.note("i", -3)
            led.note("s", "héllo")
            led.note("b", b"\x00\xff")
            led.note("t", torch.tensor(1.5))
            led.note("ti", torch.tensor(7))
            led.note("np", np.float32(2.5))
            led.note("arr", np.arange(3, dtype=np.uint8))
            led.note("i", 4)  # noted again: the last value counts
            led.step(0)
        assert led.closed
    out = subprocess.run([RNGSNAP, "ledger", "show", str(tmp_path / "L")],
                         capture_output=True, text=True).stdout
    notes = [ln.split(None, 2)[1:] for ln in out.splitlines()
             if ln.startswith("  note ")]
    assert notes == [["f", "0.25"], ["i", "4"], ["s", '"héllo"'],
                     ["b", "0x00ff"], ["t", "1.5"], ["ti", "7"],
                     ["np", "2.5"], ["arr", "0x000102"]], out


def test_errors(tmp_path):
    with rngsnap.Context() as ctx:
        ctx.seed_all(1)
        led = ctx.ledger(str(tmp_path / "L"))
        with pytest.raises(rngsnap.Error) as e:
            ctx.ledger(str(tmp_path / "M"))
        assert str(e.value) == ("ctx.ledger() %s: ledger %s is already open "
                                "on this context: close it first"
                                % (tmp_path / "M", tmp_path / "L"))
        with pytest.raises(rngsnap.Error) as e:
            led.note("x" * 256, 1)
        assert str(e.value) == ("led.note(): a note's name has 1 to 255 "
                                "bytes, not 256")
        with pytest.raises(TypeError) as e:
            led.note("x", [1])
        assert str(e.value) == ("led.note('x', ...): the value is list; "
                                "pass bytes, int, float or str")
        with pytest.raises(OverflowError) as e:
            led.note("x", 2 ** 64)
        assert "does not fit in 64 bits" in str(e.value)
        led.close()
        led.close()  # again: nothing to do
        with pytest.raises(rngsnap.Error) as e:
            led.step(1)
        assert str(e.value) == "led.step(): the ledger is closed"
    with rngsnap.Context() as ctx:
        ctx.set_rank(1, 2)
        with pytest.raises(rngsnap.MismatchError) as e:
            ctx.ledger(str(tmp_path / "L"))
        assert str(e.value) == (
            "ctx.ledger() %s: the ledger was written by rank 0 of 1, this "
            "context is rank 1 of 2: give each rank its own ledger (a path "
            "ending in / makes one per rank)" % (tmp_path / "L"))


def test_continued_ledger_cuts_a_torn_record(tmp_path):
    p = str(tmp_path / "L")
    with rngsnap.Context() as ctx:
        ctx.seed_all(1)
        with ctx.ledger(p) as led:
            led.step(0)
            led.step(1)
    size = os.path.getsize(p)
    with open(p, "r+b") as f:
        f.truncate(size - 3)  # a kill in mid-write of step 1
    with rngsnap.Context() as ctx:
        ctx.seed_all(1)
        with ctx.ledger(p) as led:
            led.step(1)
    out = subprocess.run([RNGSNAP, "ledger", "show", p], capture_output=True,
                         text=True).stdout
    assert "2 segments, 2 step records" in out and "torn" not in out, out
