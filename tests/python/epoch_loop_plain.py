"""An epoch loop as the accelerate guide writes it, with the job's own
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
        torch.save(state, os.path.join(args.dir, "model.pt"))


if __name__ == "__main__":
    main()
