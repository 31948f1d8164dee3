"""The training loop of docs/python.md, "Mid-epoch resume with a standard
DataLoader": random augmentation in __getitem__, 2 workers, a checkpoint
every CKPT_EVERY steps.  The page shows it as a diff: without its 5 lines
(the loop as a job has it, shuffle=True), a resumed run restarts the epoch
and differs from the uninterrupted one; with them, it resumes at any
batch, bit for bit.

    python3 loader_example.py DIR [--resume]
"""
import os
import random
import struct
import sys

import numpy as np
import torch
from torch import nn

import rngsnap
import rngsnap.torch

EPOCHS, BATCH, CKPT_EVERY = 2, 4, 3


class Augmented(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(30, 8, generator=g)
        self.y = (self.x.sum(1, keepdim=True) > 0).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i] + 0.1 * torch.randn(8)
        x = x * float(np.random.uniform(0.9, 1.1)) + random.gauss(0, 0.05)
        return x, self.y[i]


def main(folder, resume):
    torch.set_num_threads(1)
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.BCEWithLogitsLoss()

    ctx = rngsnap.Context(resume=resume)
    if not resume:
        ctx.seed_all(1234)
    data = Augmented()
    sampler = rngsnap.torch.ResumableSampler(
        ctx, ctx.stream("cpu", 0, "augment"), len(data), BATCH, EPOCHS)
    loader = torch.utils.data.DataLoader(
        rngsnap.torch.KeyedDataset(data), batch_sampler=sampler, num_workers=2)
    step = [0]
    rngsnap.torch.track(ctx)  # torch's, NumPy's and random's generators
    ctx.register_state("train.step", save=lambda: struct.pack("<Q", step[0]),
                       load=lambda b: step.__setitem__(0, *struct.unpack(
                           "<Q", b)))
    if resume:
        ctx.load(os.path.join(folder, "rng.rngsnap"))
        weights = torch.load(os.path.join(folder, "w-%d.pt" % step[0]))
        model.load_state_dict(weights["model"])
        opt.load_state_dict(weights["opt"])

    for epoch in sampler.epochs():
        for x, y in sampler.batches(loader):
            opt.zero_grad()
            loss = loss_fn(model(x), y)  # dropout draws from torch.cpu
            loss.backward()
            opt.step()
            step[0] += 1
            print("epoch %d step %d loss %s" % (epoch, step[0],
                                                loss.item().hex()), flush=True)
            if step[0] % CKPT_EVERY == 0:
                torch.save({"model": model.state_dict(),
                            "opt": opt.state_dict()},
                           os.path.join(folder, "w-%d.pt" % step[0]))
                ctx.save(os.path.join(folder, "rng.rngsnap"), replace=True)
                print("checkpoint %d" % step[0], flush=True)
    ctx.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] == ["--resume"])
