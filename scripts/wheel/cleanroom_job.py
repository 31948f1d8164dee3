"""cleanroom_job.py write DIR | check DIR file|bytes: a small torch job that
moves between the clean room (the wheel) and the build tree
(scripts/wheel/cleanroom.sh runs it on both sides).

write: seed with rngsnap (rngsnap.torch.track: torch's, NumPy's and
random's generators in the checkpoint), train a Linear+Dropout for 3 SGD
steps, save the RNG state as a file (ctx.save) and inside the job's own
torch.save (ctx.state_dict()), then record what comes next: an rngsnap
stream's draws, torch.rand, and 3 more training losses.
check: resume from DIR (the file, or the state dict's bytes) and produce
exactly the recorded values.  Prints where the package and its libraries
were loaded from."""
import json
import os
import random
import sys

import numpy as np
import torch

import rngsnap
import rngsnap.torch


def libraries():
    """The rngsnap-related shared objects this process mapped."""
    seen = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            base = os.path.basename(path)
            if base.startswith(("libinih", "libltdl", "libxxhash", "_rngsnap",
                                "rngsnap_")):
                seen.add(path)
    return sorted(seen)


def model_and_opt():
    torch.manual_seed(0)  # the weights only; every draw after comes from
    m = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Dropout(0.5),
                            torch.nn.Linear(6, 1))
    return m, torch.optim.SGD(m.parameters(), lr=0.1)


def steps(m, opt, n):
    """n training steps; data, dropout masks and shuffles all drawn."""
    losses = []
    for _ in range(n):
        x = torch.randn(8, 6)
        x = x + float(np.random.rand()) + random.random()
        loss = m(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def next_values(ctx, m, opt):
    return {"stream": ctx.stream("cpu", 0, "dropout").generate("u64", 4).tolist(),
            "torch": torch.rand(3).tolist(),
            "losses": steps(m, opt, 3)}


def write(out):
    os.makedirs(out, exist_ok=True)
    m, opt = model_and_opt()
    ctx = rngsnap.Context()
    rngsnap.torch.track(ctx)
    ctx.seed_all(2024)
    ctx.stream("cpu", 0, "dropout").generate("u64", 3)
    steps(m, opt, 3)
    ctx.save(os.path.join(out, "ck.rngsnap"))
    torch.save({"model": m.state_dict(), "opt": opt.state_dict(),
                "rng": ctx.state_dict()}, os.path.join(out, "job.pt"))
    got = next_values(ctx, m, opt)
    with open(os.path.join(out, "expect.json"), "w") as f:
        json.dump(got, f)
    ctx.close()
    print("job: %s wrote %s: next losses %s" % (where(), out, got["losses"]))


def check(out, how):
    with open(os.path.join(out, "expect.json")) as f:
        expect = json.load(f)
    state = torch.load(os.path.join(out, "job.pt"))
    m, opt = model_and_opt()
    m.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    ctx = rngsnap.Context(resume=True)
    rngsnap.torch.track(ctx)
    if how == "file":
        ctx.load(os.path.join(out, "ck.rngsnap"))
    else:
        ctx.load_state_dict(state["rng"])
    got = next_values(ctx, m, opt)
    ctx.close()
    if got != expect:
        print("job: FAIL: %s resumed %s (%s) and drew %s, not %s"
              % (where(), out, how, got, expect))
        sys.exit(1)
    print("job: %s resumed %s (%s): the same stream words, torch.rand and "
          "losses %s" % (where(), out, how, got["losses"]))


def wheel_libraries():
    """Installed from the wheel: inih, libltdl and xxHash are the wheel's
    grafted copies (rngsnap.libs/name-<hash>), whatever the system has."""
    if rngsnap.find_config()[1] != "package":
        return
    libs = [p for p in libraries() if os.path.basename(p).startswith(
        ("libinih", "libltdl", "libxxhash"))]
    grafted = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(rngsnap.__file__))), "rngsnap.libs") + "/"
    if len(libs) != 3 or not all(p.startswith(grafted) for p in libs):
        print("job: FAIL: the libraries mapped are %s, not three of %s"
              % (libs, grafted))
        sys.exit(1)


def where():
    wheel_libraries()
    return "rngsnap %s from %s (config %s; libraries %s)" % (
        rngsnap.__version__, os.path.dirname(rngsnap.__file__),
        rngsnap.find_config()[1], ", ".join(libraries()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"] and len(sys.argv) == 3:
        write(sys.argv[2])
    elif sys.argv[1:2] == ["check"] and len(sys.argv) == 4 \
            and sys.argv[3] in ("file", "bytes"):
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: cleanroom_job.py write DIR | check DIR file|bytes")
