"""onefile_job.py - a PyTorch job whose one torch.save file holds
everything, rngsnap's state included (docs/python.md, "Stateful").

Each step draws its batch and a noise term from torch's and NumPy's global
generators, and dropout from torch's; after each step the job writes
{"model", "optim", "step", "rng"} with torch.save to a temporary file and
os.replace()s it over the checkpoint, as a user would.  Run again, it
resumes from that file.  Killed anywhere, the resumed run prints exactly
the losses of the uninterrupted one.  The lines marked "rngsnap" are all
it takes (the docs show them as a diff).

    python3 onefile_job.py --dir DIR [--steps N]
"""
import argparse
import os

import numpy as np
import torch

import rngsnap.torch  # rngsnap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    path = os.path.join(args.dir, "ck.pt")
    torch.manual_seed(1)
    np.random.seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Dropout(0.3),
                                torch.nn.Linear(6, 1))
    optim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def save(step):
        state = {"model": model.state_dict(), "optim": optim.state_dict(),
                 "step": step, "rng": ctx.state_dict()}  # rngsnap
        torch.save(state, path + ".tmp")
        os.replace(path + ".tmp", path)

    ctx = rngsnap.Context(resume=os.path.exists(path))  # rngsnap
    rngsnap.torch.track(ctx)  # rngsnap
    start = 0
    if os.path.exists(path):
        ck = torch.load(path)
        model.load_state_dict(ck["model"])
        optim.load_state_dict(ck["optim"])
        start = ck["step"]
        ctx.load_state_dict(ck["rng"])  # rngsnap
        print("resumed after step", start, flush=True)
    for step in range(start + 1, args.steps + 1):
        x = torch.randn(8, 6)
        y = x.sum(1, keepdim=True) + torch.from_numpy(
            np.random.normal(0, 0.1, (8, 1)).astype(np.float32))
        loss = torch.nn.functional.mse_loss(model(x), y)
        optim.zero_grad()
        loss.backward()
        optim.step()
        print("step %d loss %s" % (step, loss.item().hex()), flush=True)
        save(step)


if __name__ == "__main__":
    main()
