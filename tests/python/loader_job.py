"""loader_job.py - the job of test_sampler_resume.py and
test_sampler_ranks.py: a DataLoader over rngsnap.torch.ResumableSampler
(DistributedResumableSampler with --rank) and KeyedDataset, whose samples
get random augmentation from torch, NumPy and random, and whose loop draws
from the three main-process generators after every batch (as dropout
would).  After every batch it prints the batch and those draws, saves a
checkpoint, and prints "saved E K"; with --sync it then waits for a line
on stdin, so a test can SIGKILL it at a checkpoint of its choosing.

    python3 loader_job.py DIR [--workers N] [--persistent]
        [--method fork|spawn|forkserver] [--resume] [--sync]
        [--rank R --world W --rdv FILE]
"""
import argparse
import os
import random
import sys

import numpy as np
import torch

import rngsnap
import rngsnap.torch

LENGTH, BATCH, EPOCHS = 26, 3, 2


class Augmented(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(LENGTH, 4, generator=g)

    def __len__(self):
        return LENGTH

    def __getitem__(self, i):
        x = self.x[i] + torch.randn(4)
        x = x * float(np.random.uniform(0.9, 1.1)) + random.gauss(0, 1)
        return x, i


def batches(lines):
    """{(epoch, batches taken): the rest of its line} of the job's output."""
    out = {}
    for line in lines:
        w = line.split(maxsplit=3)
        if w and w[0] == "batch":
            out[(int(w[1]), int(w[2]))] = w[3].rstrip("\n")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--persistent", action="store_true")
    ap.add_argument("--method", default="fork")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--world", type=int)
    ap.add_argument("--rdv")
    a = ap.parse_args()
    torch.set_num_threads(1)
    ranks = a.rank is not None
    if ranks:
        torch.distributed.init_process_group(
            "gloo", init_method="file://" + a.rdv, rank=a.rank,
            world_size=a.world)
    ctx = rngsnap.Context(resume=a.resume)
    if ranks:
        ctx.set_rank(a.rank, a.world)
    if not a.resume:
        ctx.seed_all(99)
        torch.manual_seed(5)
        np.random.seed(6)
        random.seed(7)
    stream = ctx.stream("cpu", 0, "augment")
    if ranks:
        sampler = rngsnap.torch.DistributedResumableSampler(
            ctx, stream, LENGTH, BATCH, EPOCHS)
    else:
        sampler = rngsnap.torch.ResumableSampler(ctx, stream, LENGTH, BATCH,
                                                 EPOCHS)
    kw = {}
    if a.workers:
        kw = dict(persistent_workers=a.persistent, prefetch_factor=4,
                  multiprocessing_context=a.method)
    loader = torch.utils.data.DataLoader(
        rngsnap.torch.KeyedDataset(Augmented()), batch_sampler=sampler,
        num_workers=a.workers, **kw)
    rngsnap.torch.track(ctx)
    ck = os.path.join(a.dir, "ck" if ranks else "ck.rngsnap")
    if a.resume:
        ctx.load_ranks(ck) if ranks else ctx.load(ck)
    for epoch in sampler.epochs():
        for x, index in sampler.batches(loader):
            drawn = (torch.rand(2).numpy().tobytes().hex()
                     + np.random.rand(1).tobytes().hex()
                     + random.random().hex())
            e, k = sampler.position
            print("batch", e, k, x.numpy().tobytes().hex(),
                  ",".join(map(str, index.tolist())), drawn, flush=True)
            if ranks:
                ctx.save_ranks(ck, replace=True)
            else:
                ctx.save(ck, replace=True)
            print("saved", e, k, flush=True)
            if a.sync:
                sys.stdin.readline()
    ctx.close()
    if ranks:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
