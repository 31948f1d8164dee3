"""epoch_loop.py with rngsnap's state in a file of its own: after each
epoch ctx.save(rng.rngsnap, tag=epoch), then torch.save(model.pt with the
epoch); on resume ctx.load(rng.rngsnap, tag=the epoch model.pt holds).  A
kill between the two writes leaves the rngsnap file one epoch ahead of
model.pt, and the load refuses the pair (MismatchError, nothing restored)
instead of resuming the model of one epoch with the generators of the
next.  test_epoch_loop.py kills it there and after both writes.

    python3 epoch_loop_two_files.py --dir DIR [--resume]
"""
import argparse
import os

import numpy as np
import rngsnap
import torch
from torch import nn

EPOCHS, SAMPLES, BATCH = 3, 48, 8


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    x = torch.randn(SAMPLES, 8, generator=torch.Generator().manual_seed(7))
    y = (x.sum(1, keepdim=True) > 0).float()
    g = torch.Generator().manual_seed(1234)
    rng = np.random.default_rng(2718)
    ctx = rngsnap.Context(resume=args.resume)
    ctx.register_generator("loader", g)
    ctx.register_generator("noise", rng)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=BATCH,
        shuffle=True, generator=g)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    start = 0
    if args.resume:
        state = torch.load(os.path.join(args.dir, "model.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        ctx.load(os.path.join(args.dir, "rng.rngsnap"), tag=state["epoch"])
    for epoch in range(start, EPOCHS):
        for xb, yb in loader:
            noise = torch.from_numpy(
                rng.normal(0.0, 0.1, size=xb.shape).astype(np.float32))
            loss = nn.functional.binary_cross_entropy_with_logits(
                model(xb + noise), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss", epoch, loss.item().hex(), flush=True)
        state = {"model": model.state_dict(), "opt": opt.state_dict(),
                 "epoch": epoch}
        # two files, two writes: the tag ties them (a kill in between
        # leaves a pair that ctx.load(..., tag=) refuses)
        ctx.save(os.path.join(args.dir, "rng.rngsnap"), replace=True,
                 tag=epoch)
        torch.save(state, os.path.join(args.dir, "model.pt"))


if __name__ == "__main__":
    main()
