"""train_example.py - a small PyTorch training job that resumes bit-exactly.

Model with dropout, SGD with momentum, a DataLoader with 2 workers whose
samples get random augmentation from torch, NumPy and random.  Every
CKPT_EVERY steps it saves the weights (torch.save) and then one rngsnap
checkpoint holding every generator and the job's progress; the rngsnap
file, written atomically and last, is the commit record.  Killed at any
moment and run again with --resume, it prints exactly the losses the
uninterrupted job prints.  (docs/python.md shows this file.)

    python3 train_example.py --dir DIR [--resume]
"""
import argparse
import os
import random
import struct

import numpy as np
import torch
from torch import nn

import rngsnap
import rngsnap.torch

EPOCHS, BATCH, SAMPLES, CKPT_EVERY = 2, 4, 32, 3


class Augmented(torch.utils.data.Dataset):
    """Each sample's augmentation is drawn from torch, NumPy and random
    after seeding them from the key (epoch, index): the sample is the same
    whichever worker makes it, and however far the job got before."""

    def __init__(self, stream):
        self.stream, self.epoch = stream, 0
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(SAMPLES, 8, generator=g)
        self.y = (self.x.sum(1, keepdim=True) > 0).float()

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        rngsnap.torch.seed_from(self.stream.derive(self.epoch, index))
        x = self.x[index] + 0.1 * torch.randn(8)
        x = x * float(np.random.uniform(0.9, 1.1)) + random.gauss(0, 0.05)
        return x, self.y[index]


class Shuffle(torch.utils.data.Sampler):
    """Each epoch's order comes from the key (epoch, 0) of its own stream;
    `start` skips the samples already trained on when resuming."""

    def __init__(self, stream):
        self.stream, self.epoch, self.start = stream, 0, 0

    def __len__(self):
        return SAMPLES - self.start

    def __iter__(self):
        keys = self.stream.derive(self.epoch, 0).generate("u64", SAMPLES)
        order = np.argsort(keys, kind="stable")
        return iter(order[self.start:].tolist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    ck = os.path.join(args.dir, "rng.rngsnap")
    torch.set_num_threads(1)

    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    ctx = rngsnap.Context(resume=args.resume)
    if not args.resume:
        ctx.seed_all(1234)
    data = Augmented(ctx.stream("cpu", 0, "augment"))
    sampler = Shuffle(ctx.stream("cpu", 0, "default"))
    progress = [0, 0]  # epoch, steps done in it
    # After building the model, before the load: draws from here on count.
    rngsnap.torch.track(ctx)
    ctx.register_state(
        "train.progress", save=lambda: struct.pack("<II", *progress),
        load=lambda b: progress.__setitem__(slice(None),
                                            struct.unpack("<II", b)))
    if args.resume:
        ctx.load(ck)
        weights = torch.load(os.path.join(args.dir, "w-%d-%d.pt"
                                          % tuple(progress)))
        model.load_state_dict(weights["model"])
        opt.load_state_dict(weights["opt"])

    loss_fn = nn.BCEWithLogitsLoss()
    while progress[0] < EPOCHS:
        epoch = progress[0]
        data.epoch = sampler.epoch = epoch
        sampler.start = progress[1] * BATCH
        loader = torch.utils.data.DataLoader(
            data, batch_size=BATCH, sampler=sampler, num_workers=2,
            worker_init_fn=rngsnap.torch.worker_init_fn(
                ctx.stream("cpu", 0, "default"), epoch),
            # Its own generator: the loader's base seed must not be drawn
            # from torch's default generator, which the checkpoint holds.
            generator=torch.Generator())
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)  # dropout draws from torch.cpu
            loss.backward()
            opt.step()
            progress[1] += 1
            print("epoch %d step %d loss %s" % (epoch, progress[1],
                                                loss.item().hex()), flush=True)
            if progress[1] % CKPT_EVERY == 0:
                name = "w-%d-%d.pt" % tuple(progress)
                torch.save({"model": model.state_dict(),
                            "opt": opt.state_dict()},
                           os.path.join(args.dir, name))
                ctx.save(ck, replace=True)
                print("checkpoint %d %d" % tuple(progress), flush=True)
        progress[:] = [epoch + 1, 0]
    ctx.close()


if __name__ == "__main__":
    main()
