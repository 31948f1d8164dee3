"""epoch_loop.py with a divergence ledger (docs/python.md, "The divergence
ledger"): every batch is a step, marked with its loss; the input is also
scaled by a mask drawn from rngsnap's cpu:0/augment stream.  --debug-draw
makes one extra draw of 4 words from that stream at the first step after
a resume (the kind of stray draw the ledger exists to find).
test_ledger_epoch.py kills and resumes it and diffs the ledgers.

    python3 epoch_loop_ledger.py --dir DIR --ledger PATH [--resume]
                                 [--debug-draw]

The rest is epoch_loop.py's own description:

An epoch loop as the accelerate guide writes it, with the job's own
generators: a torch.Generator passed to the DataLoader (its shuffling)
and np.random.default_rng (input noise).  After each epoch it saves model
and optimizer with torch.save and can resume from there; epoch_loop.py
keeps rngsnap's state in that same file (one write, one commit), and
epoch_loop_two_files.py in a file of its own, tied to it by a tag.

epoch_loop_plain.py saves no generator state, so a resumed run sees other
batches and other noise.  epoch_loop.py is the same file plus six rngsnap
lines (docs/python.md shows the diff): killed after any epoch and run
again with --resume, it prints exactly the losses of the uninterrupted
run.  test_epoch_loop.py runs both.

    python3 epoch_loop.py --dir DIR [--resume]   (or epoch_loop_plain.py)
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
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--debug-draw", action="store_true")
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
    if not args.resume:
        ctx.seed_all(99)  # the augment stream's seed
    if args.resume:
        state = torch.load(os.path.join(args.dir, "model.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        ctx.load_state_dict(state["rng"])
    aug = ctx.stream("cpu", 0, "augment")
    led = ctx.ledger(args.ledger)
    step = start * (SAMPLES // BATCH)
    for epoch in range(start, EPOCHS):
        for xb, yb in loader:
            mask = torch.from_numpy(aug.generate("f32", xb.numel()))
            xb = xb * (1 + 0.01 * mask.view(xb.shape))
            if args.debug_draw and args.resume and step == start * (
                    SAMPLES // BATCH):
                aug.generate("u32", 4)  # the stray debug draw
            noise = torch.from_numpy(
                rng.normal(0.0, 0.1, size=xb.shape).astype(np.float32))
            loss = nn.functional.binary_cross_entropy_with_logits(
                model(xb + noise), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss", epoch, loss.item().hex(), flush=True)
            led.note("loss", loss.item())
            led.step(step)
            step += 1
        state = {"model": model.state_dict(), "opt": opt.state_dict(),
                 "epoch": epoch}
        state["rng"] = ctx.state_dict()
        torch.save(state, os.path.join(args.dir, "model.pt"))


if __name__ == "__main__":
    main()
