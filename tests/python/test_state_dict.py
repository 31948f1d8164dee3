"""ctx.state_dict() / ctx.load_state_dict(state): the Stateful protocol.
Values are plain bytes/int/str; one key per rank ("rank/<r>"); a rank that
finds no bytes of its own, or another world size, gets MismatchError and
nothing changes; torch.save/torch.load carry it; over 2 gloo ranks each
rank's bytes, gathered (every rank's on every rank) and not, resume each
rank bit-exactly, and world size 2 -> 1 is refused."""
import io
import json
import textwrap

import pytest

from conftest import run_py, spawn_ranks

import rngsnap

STREAMS = [("cpu", 0, "default"), ("cpu", 0, "dropout"), ("cpu", 0, "augment")]


def _positions(ctx):
    return [ctx.stream(*k).position() for k in STREAMS]


def _draws(ctx, n=8):
    return [ctx.stream(*k).generate("u64", n).tolist() for k in STREAMS]


def test_round_trip_and_plain_values(ctx):
    box = {"v": b"step=4"}
    ctx.register_state("progress", save=lambda: box["v"],
                       load=lambda b: box.__setitem__("v", b))
    state = ctx.state_dict()
    assert set(state) == {"format", "version", "world_size", "rank/0"}
    assert state["format"] == "rngsnap-state-dict"
    assert state["version"] == 1 and state["world_size"] == 1
    assert type(state["rank/0"]) is bytes
    assert {type(v) for v in state.values()} <= {bytes, int, str}
    after = _draws(ctx)
    box["v"] = b"step=9"
    ctx.load_state_dict(state)
    assert box["v"] == b"step=4"
    assert _draws(ctx) == after


def test_torch_save_and_load(ctx):
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "rng": ctx.state_dict()}, buf)
    after = _draws(ctx)
    buf.seek(0)
    ck = torch.load(buf)
    with rngsnap.Context(resume=True) as other:
        other.load_state_dict(ck["rng"])
        assert _draws(other) == after


def test_torch_load_weights_only(ctx):
    torch = pytest.importorskip("torch")
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip("torch %s: torch.load(weights_only=True) refuses bytes "
                    "values (its unpickler does not allow _codecs.encode, "
                    "which pickles bytes); torch >= 2 accepts them"
                    % torch.__version__)
    buf = io.BytesIO()
    torch.save({"rng": ctx.state_dict()}, buf)
    after = _draws(ctx)
    buf.seek(0)
    ctx.load_state_dict(torch.load(buf, weights_only=True)["rng"])
    assert _draws(ctx) == after


# A job's checkpoint as python.md's one-file recipe writes it, with
# track()'s generators and three of the job's own: saved to a file, then
# read in another process with plain torch.load(path).
PLAIN_LOAD_JOB = textwrap.dedent("""\
    import json, random, sys
    import numpy as np, torch
    import rngsnap, rngsnap.torch
    path, mode = sys.argv[1], sys.argv[2]
    seed = 7 if mode == "save" else 99  # the resumed run starts elsewhere
    torch.manual_seed(seed); np.random.seed(seed); random.seed(seed)
    model = torch.nn.Linear(3, 2)
    ctx = rngsnap.Context(resume=mode == "load")
    rngsnap.torch.track(ctx)
    gens = {"loader": torch.Generator().manual_seed(seed),
            "noise": np.random.default_rng(seed), "aug": random.Random(seed)}
    for name, g in gens.items():
        ctx.register_generator(name, g)

    def draws():
        return {"streams": [ctx.stream("cpu", 0, n).generate("u64", 2).tolist()
                            for n in ("default", "dropout", "augment")],
                "torch": torch.randint(0, 2**62, (2,)).tolist(),
                "numpy": np.random.randint(0, 2**62, 2).tolist(),
                "random": [random.getrandbits(64) for _ in range(2)],
                "loader": torch.randint(0, 2**62, (2,),
                                        generator=gens["loader"]).tolist(),
                "noise": gens["noise"].integers(0, 2**62, 2).tolist(),
                "aug": [gens["aug"].getrandbits(64) for _ in range(2)]}

    if mode == "save":
        ctx.seed_all(5)
        draws()  # every generator mid-stream at the save
        torch.save({"model": model.state_dict(), "step": 3,
                    "rng": ctx.state_dict()}, path)
        # what weights_only=True refuses: a pickled object
        torch.save({"gen": random.Random(1)}, path + ".control")
    else:
        ck = torch.load(path)
        model.load_state_dict(ck["model"])
        ctx.load_state_dict(ck["rng"])
        try:
            torch.load(path + ".control")
            print("control loaded")
        except Exception as e:
            print("control refused:", type(e).__name__)
    print(json.dumps(draws()))
    """)


def test_plain_torch_load_of_a_file_resumes(tmp_path):
    """torch.load(path) as it is: weights_only=True by default since torch
    2.6.  An rngsnap state dict (plain bytes, int, str) needs no allowlist
    and no safe_globals, and the restored generators draw what the
    uninterrupted run drew.  (torch 1.13's default reads it too.)"""
    torch = pytest.importorskip("torch")
    path = tmp_path / "ck.pt"
    saved = json.loads(run_py(PLAIN_LOAD_JOB, path, "save").stdout)
    control, resumed = run_py(PLAIN_LOAD_JOB, path, "load").stdout.splitlines()
    # where the default is weights_only, a pickled object is refused
    assert control == ("control loaded" if torch.__version__ < "2.6" else
                       "control refused: UnpicklingError")
    assert json.loads(resumed) == saved
    assert sorted(saved) == ["aug", "loader", "noise", "numpy", "random",
                             "streams", "torch"]


def _refused(ctx, state, cls, message):
    positions = _positions(ctx)
    with pytest.raises(cls) as e:
        ctx.load_state_dict(state)
    assert str(e.value) == message
    assert _positions(ctx) == positions
    return e.value


def test_malformed_dicts_refused(ctx):
    good = ctx.state_dict()
    ctx.stream("cpu", 0, "default").generate("u32", 3)
    with pytest.raises(TypeError, match="^load_state_dict: state is bytes, "
                       "not the dict ctx.state_dict\\(\\) returns$"):
        ctx.load_state_dict(good["rank/0"])
    e = _refused(ctx, {"weight": 1}, rngsnap.CorruptError,
                 "load_state_dict: not an rngsnap state dict (its \"format\" "
                 "is None, expected 'rngsnap-state-dict'); nothing restored")
    assert e.name == "RNGSNAP_E_CORRUPT" and e.code == 6
    _refused(ctx, dict(good, version=2), rngsnap.MismatchError,
             "load_state_dict: state dict version 2, this rngsnap reads "
             "version 1; nothing restored")
    _refused(ctx, dict(good, world_size="1"), rngsnap.CorruptError,
             "load_state_dict: \"world_size\" is '1', not a positive int; "
             "nothing restored")
    _refused(ctx, dict(good, extra=b""), rngsnap.CorruptError,
             "load_state_dict: unknown key 'extra' (an rngsnap state dict "
             "holds format, version, world_size and rank/<r>); nothing "
             "restored")
    for key in ("rank/01", "rank/-1", "rank/x"):
        state = dict(good)
        state[key] = state.pop("rank/0")
        _refused(ctx, state, rngsnap.CorruptError,
                 "load_state_dict: unknown key %r (an rngsnap state dict "
                 "holds format, version, world_size and rank/<r>); nothing "
                 "restored" % key)
    _refused(ctx, dict(good, **{"rank/1": b""}), rngsnap.CorruptError,
             "load_state_dict: key 'rank/1' is past world_size 1; nothing "
             "restored")
    _refused(ctx, dict(good, **{"rank/0": "text"}), rngsnap.CorruptError,
             "load_state_dict: 'rank/0' is str, not bytes; nothing restored")
    cut = dict(good, **{"rank/0": good["rank/0"][:-1]})
    with pytest.raises(rngsnap.CorruptError, match="^checkpoint bytes: "):
        ctx.load_state_dict(cut)


def test_own_rank_or_mismatch(ctx):
    """Never another rank's state: a rank of 2 whose key is missing is
    refused even where rank 0's bytes are there, and bytes of another
    rank put under this rank's key are refused by the checkpoint's own
    header."""
    ctx.set_rank(0, 2)
    rank0 = ctx.state_dict()
    ctx.set_rank(1, 2)
    rank1 = ctx.state_dict()
    assert set(rank1) == {"format", "version", "world_size", "rank/1"}
    _refused(ctx, rank0, rngsnap.MismatchError,
             "load_state_dict: no 'rank/1' in the state dict (it holds "
             "rank/0 of world size 2); nothing restored. A framework that "
             "writes rank 0's dict only (accelerate, Lightning) needs "
             "state_dict(gather=True) on every rank")
    swapped = {"format": "rngsnap-state-dict", "version": 1,
               "world_size": 2, "rank/1": rank0["rank/0"]}
    with pytest.raises(rngsnap.MismatchError,
                       match="^checkpoint bytes: checkpoint is rank 0 of 2, "
                             "this process is rank 1 of 2; nothing restored"):
        ctx.load_state_dict(swapped)
    ctx.load_state_dict(rank1)
    # another world size, whatever the keys
    ctx.set_rank(0, 1)
    _refused(ctx, rank0, rngsnap.MismatchError,
             "load_state_dict: the state dict was saved by 2 ranks, this job "
             "has 1 (this is rank 0); nothing restored. Resume with the "
             "world size that saved")


def test_tracked_order_check_applies(tmp_path):
    """rngsnap.torch.track(): drawing a tracked generator before
    load_state_dict is OrderError, as before ctx.load."""
    torch = pytest.importorskip("torch")
    import rngsnap.torch as rt
    with rngsnap.Context() as src:
        src.seed_all(1)
        rt.track(src)
        state = src.state_dict()
    with rngsnap.Context(resume=True) as ctx:
        rt.track(ctx)
        torch.rand(1)
        with pytest.raises(rngsnap.OrderError, match="torch.cpu changed"):
            ctx.load_state_dict(state)


# ---- two gloo ranks -----------------------------------------------------

CHILD = r"""
import json, sys
import torch, torch.distributed as dist
import rngsnap
rank, size, rdv, d, mode = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=size)

def draws(ctx):
    return [ctx.stream("cpu", 0, n).generate("u64", 4).tolist()
            for n in ("default", "dropout", "augment")]

def attempt(what):
    try:
        return what()
    except rngsnap.Error as e:
        return {"error": [type(e).__name__, str(e), e.name]}

def loaded(path):
    # a fresh resumed context restores from the dict in path
    ctx = rngsnap.Context(resume=True)
    ctx.set_rank(rank, size)
    ctx.load_state_dict(torch.load(path))
    return draws(ctx)

out = {"rank": rank}
if mode == "save":
    ctx = rngsnap.Context()
    ctx.set_rank(rank, size)
    ctx.seed_all(5)
    ctx.stream("cpu", 0, "default").generate("u32", 3 + rank)
    for gather in (False, True):
        state = ctx.state_dict(gather=gather)
        torch.save(state, "%s/%s-%d.pt" % (d, "all" if gather else "own",
                                          rank))
    out["keys"] = sorted(state)
    out["headers"] = {k: list(v[32:40]) for k, v in state.items()
                      if k.startswith("rank/")}
    out["next"] = draws(ctx)
    # refusals: contexts of swapped ranks, then a rank whose save fails
    # (rank 1: a resumed context that has not loaded); gather=True raises
    # on both ranks
    swapped = rngsnap.Context()
    swapped.set_rank(1 - rank, size)
    out["swapped"] = attempt(lambda: swapped.state_dict(gather=True))
    ctx = rngsnap.Context(resume=rank == 1)
    ctx.set_rank(rank, size)
    out["failed"] = attempt(lambda: ctx.state_dict(gather=True))
elif mode == "load":
    # DCP-like: each rank its own dict; accelerate/Lightning-like: rank
    # 0's dict, gathered or not
    out["own"] = attempt(lambda: loaded("%s/own-%d.pt" % (d, rank)))
    out["rank0 all"] = attempt(lambda: loaded("%s/all-0.pt" % d))
    out["rank0 own"] = attempt(lambda: loaded("%s/own-0.pt" % d))
print(json.dumps(out))
dist.barrier()
dist.destroy_process_group()
"""


def _ranks(tmp_path, mode):
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    return spawn_ranks(CHILD, 2, tmp_path / ("rdv-" + mode), tmp_path, mode)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    return d, _ranks(d, "save")


@pytest.fixture(scope="module")
def loaded(saved):
    return _ranks(saved[0], "load")


def test_gathered_dict_holds_every_rank(saved):
    d, outs = saved
    for r in outs:
        assert r["keys"] == ["format", "rank/0", "rank/1", "version",
                             "world_size"]
        # "rank/<r>" holds rank r's checkpoint: header rank r, world 2
        assert r["headers"] == {"rank/0": [0, 0, 0, 0, 2, 0, 0, 0],
                                "rank/1": [1, 0, 0, 0, 2, 0, 0, 0]}
    assert outs[0]["next"] != outs[1]["next"]
    import torch
    a, b = (torch.load(str(d / ("all-%d.pt" % r))) for r in range(2))
    assert a == b  # the same dict on every rank: DCP keeps one
    own = [torch.load(str(d / ("own-%d.pt" % r))) for r in range(2)]
    assert [sorted(o) for o in own] == [
        ["format", "rank/%d" % r, "version", "world_size"] for r in range(2)]


def test_each_rank_resumes_from_its_own_dict(saved, loaded):
    assert [r["own"] for r in loaded] == [r["next"] for r in saved[1]]


def test_each_rank_resumes_from_rank0s_gathered_dict(saved, loaded):
    assert [r["rank0 all"] for r in loaded] == [r["next"] for r in saved[1]]


def test_rank0s_own_dict_refused_on_rank1(saved, loaded):
    assert loaded[0]["rank0 own"] == saved[1][0]["next"]
    error = loaded[1]["rank0 own"]["error"]
    assert error[0] == "MismatchError"
    assert error[1].startswith(
        "load_state_dict: no 'rank/1' in the state dict (it holds rank/0 of "
        "world size 2)")


def test_world_size_2_to_1_refused(saved):
    import torch
    d, _ = saved
    state = torch.load(str(d / "all-0.pt"))
    with rngsnap.Context(resume=True) as ctx:
        assert ctx.world_size == 1
        with pytest.raises(rngsnap.MismatchError,
                           match="^load_state_dict: the state dict was saved "
                                 "by 2 ranks, this job has 1"):
            ctx.load_state_dict(state)
        with pytest.raises(rngsnap.OrderError):  # nothing loaded
            ctx.stream("cpu", 0, "default").generate("u32", 1)


@pytest.fixture(scope="module")
def refused(saved):
    return saved[1]


def test_gather_refuses_contexts_of_other_ranks(refused):
    for r in refused:
        assert r["swapped"]["error"] == [
            "MismatchError", "state_dict(gather=True): group rank 0 of 2 has "
            "a context of rank 1 of 2 (set_rank, or RANK/WORLD_SIZE); each "
            "rank's context must be its group rank", "RNGSNAP_E_MISMATCH"]


def test_gather_fails_on_every_rank_together(refused):
    """Rank 1 cannot save: both ranks raise, none waits in the next
    collective (the run would not end)."""
    error = refused[1]["failed"]["error"]
    assert error[0] == "OrderError"
    assert "has not loaded a checkpoint yet" in error[1]
    assert refused[0]["failed"]["error"] == [
        "OrderError", "state_dict(gather=True): rank 1 could not save "
        "(OrderError there); no rank's state dict is complete",
        "RNGSNAP_E_ORDER"]
