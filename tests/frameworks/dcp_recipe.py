"""torch.distributed.checkpoint (DCP) + rngsnap, one process per rank
(docs/python.md, "DCP"): the context is a Stateful in the state dict
that dcp.save writes and dcp.load reads, each rank's bytes under its own
key, checkpoints inside epochs (the batches come from
rngsnap.torch.DistributedResumableSampler, whose position is in the
context's bytes).

    torchrun --nproc-per-node 2 dcp_recipe.py --dir DIR [--resume]
"""
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.stateful import Stateful

import rngsnap
import rngsnap.torch
from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH, SAMPLES, CKPT_EVERY = 2, 3, 26, 2  # 5 batches a rank an epoch


class RngState(Stateful):
    """The context as DCP's Stateful.  dcp.save keeps one rank's value of a
    key that several ranks hold, so ctx.state_dict() puts this rank's
    bytes under "rank/<r>".  dcp.load asks state_dict() for the keys to
    read before it reads them, when a resumed context cannot save yet:
    until the load, this rank's keys are given with empty values."""

    def __init__(self, ctx, resume):
        self.ctx, self.awaiting = ctx, resume

    def state_dict(self):
        if self.awaiting:
            return {"format": self.ctx.STATE_DICT_FORMAT,
                    "version": self.ctx.STATE_DICT_VERSION,
                    "world_size": self.ctx.world_size,
                    "rank/%d" % self.ctx.rank: b""}
        return self.ctx.state_dict()

    def load_state_dict(self, state_dict):
        self.ctx.load_state_dict(state_dict)
        self.awaiting = False


def train(args):
    torch.manual_seed(1234)  # the same init on every rank
    model = nn.parallel.DistributedDataParallel(net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()

    ctx = rngsnap.Context(resume=args.resume)  # its rank from RANK
    if not args.resume:
        ctx.seed_all(1234)
    data = Augmented(SAMPLES)
    sampler = rngsnap.torch.DistributedResumableSampler(
        ctx, ctx.stream("cpu", 0, "augment"), len(data), BATCH, EPOCHS)
    loader = torch.utils.data.DataLoader(rngsnap.torch.KeyedDataset(data),
                                         batch_sampler=sampler)
    rngsnap.torch.track(ctx)  # torch (every device), NumPy, random
    rng = RngState(ctx, args.resume)

    step = 0
    if args.resume:  # the last checkpoint whose metadata was written
        step = max(int(d[5:]) for d in os.listdir(args.dir) if d.startswith(
            "step-") and os.path.exists(os.path.join(args.dir, d, ".metadata")))
        state = {"model": model.state_dict(), "rng": rng, "step": 0}
        dcp.load(state, checkpoint_id=os.path.join(args.dir, "step-%d" % step))
        model.load_state_dict(state["model"])
        resumed(state["step"])

    ledger = ctx.ledger(os.path.join(args.dir, "ledger/"))  # one file a rank
    for epoch in sampler.epochs():
        for x, y in sampler.batches(loader):
            opt.zero_grad()
            loss = loss_fn(model(x), y)  # dropout: this rank's generator
            loss.backward()
            opt.step()
            step += 1
            ledger.step(step)  # rngsnap ledger diff
            print("loss", loss.item().hex(), flush=True)
            if step % CKPT_EVERY == 0:
                dcp.save({"model": model.state_dict(), "rng": rng,
                          "step": step},
                         checkpoint_id=os.path.join(args.dir, "step-%d" % step))
                committed(step)
    ctx.close()


def main():
    args = parse_args()
    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_* (torchrun)
    # The DDP module ends with train()'s frame, before the process group.
    # A DDP Reducer freed after destroy_process_group() ends gloo's process
    # group itself, holding the GIL, and waits for gloo's worker threads;
    # one still freeing a tensor of the last collective waits for the GIL:
    # a hung rank (2 runs in 6 on torch 2.13, at the last line).  A `del
    # model` does not end it: rngsnap's untracked report read this frame's
    # f_locals, whose snapshot keeps every local alive until the frame ends.
    train(args)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
