"""A DCP job, 2 ranks (gloo), DDP model, dcp.save every --every steps and
dcp.load at resume: plain (a DistributedSampler, the batches done skipped
at resume), or with rngsnap (the lines marked "# rngsnap": the context,
its resumable sampler and rngsnap.integrations.dcp.RngState).

    python3 dcp_job.py --dir DIR [--resume] [--plain] [--ranks N]
                       [--every K] [--workers N]

Without RANK in the environment it starts --ranks copies of itself with
RANK, WORLD_SIZE and MASTER_* set, as torchrun does, sharing its stdin and
stdout: the harness holds them at a checkpoint and kills them together
(killpoint.committed).  Each rank prints "loss <rank> <hex>" per step and
"params <rank> <digest>" at the end, one write a line.
"""
import hashlib
import os
import signal
import socket
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn

import rngsnap.torch  # rngsnap
from killpoint import committed  # the test harness's lines only
from rngsnap.integrations.dcp import RngState  # rngsnap
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH, SAMPLES = 2, 3, 26  # 13 samples a rank: 5 steps an epoch


def say(what, value):
    sys.stdout.write("%s %d %s\n" % (what, dist.get_rank(), value))
    sys.stdout.flush()


def last_checkpoint(folder):
    """The last step-<n> whose metadata dcp.save wrote (it writes it last)."""
    return max(int(d[5:]) for d in os.listdir(folder) if d.startswith(
        "step-") and os.path.exists(os.path.join(folder, d, ".metadata")))


def plain_batches(loader, sampler, start):
    """A DCP job of its own: DistributedSampler epochs, the batches done
    before the checkpoint skipped (fetched and dropped)."""
    per_epoch = len(loader)
    for epoch in range(start // per_epoch, EPOCHS):
        sampler.set_epoch(epoch)
        for i, batch in enumerate(loader):
            if epoch * per_epoch + i >= start:
                yield batch


def train(args):
    torch.manual_seed(1234)  # the same init on every rank
    model = nn.parallel.DistributedDataParallel(net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()
    data = Augmented(SAMPLES)
    state = {"model": model.state_dict(), "step": 0}

    if args.plain:
        sampler = torch.utils.data.DistributedSampler(data, seed=1234)
        loader = torch.utils.data.DataLoader(
            data, batch_size=BATCH, sampler=sampler,
            num_workers=args.workers)
    else:
        ctx = rngsnap.Context(resume=args.resume)  # rngsnap
        if not args.resume:
            ctx.seed_all(1234)  # rngsnap
        sampler = rngsnap.torch.DistributedResumableSampler(  # rngsnap
            ctx, ctx.stream("cpu", 0, "augment"), len(data), BATCH, EPOCHS)
        loader = torch.utils.data.DataLoader(
            rngsnap.torch.KeyedDataset(data), batch_sampler=sampler,
            num_workers=args.workers)  # rngsnap: keyed samples
        rngsnap.torch.track(ctx)  # rngsnap
        state["rng"] = RngState(ctx)  # rngsnap

    step = 0
    if args.resume:
        step = last_checkpoint(args.dir)
        dcp.load(state, checkpoint_id=os.path.join(args.dir, "step-%d" % step))
        model.load_state_dict(state["model"])
        step = state["step"]

    if args.plain:
        batches = plain_batches(loader, sampler, step)
    else:  # rngsnap: the sampler's position is in the context's bytes
        batches = (b for _ in sampler.epochs()
                   for b in sampler.batches(loader))
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model(x), y)  # dropout: this rank's generator
        loss.backward()
        opt.step()
        step += 1
        say("loss", loss.item().hex())
        if step % args.every == 0:
            state.update(model=model.state_dict(), step=step)
            dcp.save(state, checkpoint_id=os.path.join(
                args.dir, "step-%d" % step))
            committed(step)
    params = b"".join(p.detach().numpy().tobytes()
                      for p in model.parameters())
    say("params", hashlib.sha256(params).hexdigest())
    if not args.plain:
        ctx.close()


def launch(ranks):
    """--ranks copies of this job, as torchrun would start them; the first
    to fail ends the others (they would wait for it in a collective)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable] + sys.argv, env=dict(
        os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
        for r in range(ranks)]
    rc = 0
    for _ in procs:
        _, status = os.wait()
        code = os.waitstatus_to_exitcode(status)
        if code and not rc:
            rc = code
            for p in procs:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return 1 if rc else 0


def main():
    args = parse_args(("--plain", dict(action="store_true")),
                      ("--ranks", dict(type=int, default=2)),
                      ("--every", dict(type=int, default=2)),
                      ("--workers", dict(type=int, default=0)))
    if "RANK" not in os.environ:
        return launch(args.ranks)
    dist.init_process_group("gloo")
    # The DDP module ends with train()'s frame, before the process group
    # (tests/frameworks/dcp_recipe.py: a Reducer freed after it can hang).
    train(args)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
