"""An accelerate job that saves its state every --every steps: plain
(accelerate's documented resume: load_state, then skip_first_batches for
the resumed epoch) or with rngsnap.integrations.accelerate (the lines
marked "rngsnap").

    python3 accelerate_job.py --dir DIR [--resume] [--workers N] [--plain]
                              [--every K] [--procs P] [--no-loader] [--cuda]

--procs 2 runs it on 2 CPU processes (torchrun, gloo); --no-loader draws
its batches from torch's generator in the loop (no DataLoader); --cuda
puts the model on cuda:0, so its dropout draws from torch's CUDA
generator (tests/gpu/accelerate_cuda.py, on a machine with a GPU).  Each
rank prints "loss <rank> <hex>" per step and, at the end, "params <rank>
<hex digest>"; the checkpoints signal the test harness
(killpoint.committed) once whole.
"""
import hashlib
import os
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch import nn

import rngsnap.integrations.accelerate  # rngsnap
from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH = 2, 4  # 24 samples: 6 steps an epoch (3 on 2 processes)


class Drawn:
    """--no-loader: an epoch's batches drawn from torch's generator as the
    loop takes them (skip: the batches taken before a resume)."""

    def __init__(self, skip=0):
        self.skip = skip

    def __len__(self):
        return 24 // BATCH

    def __iter__(self):
        for _ in range(len(self) - self.skip):
            x = torch.randn(BATCH, 8)
            yield x, (x.sum(1, keepdim=True) > 0).float()


def main():
    args = parse_args(("--workers", dict(type=int, default=0)),
                      ("--plain", dict(action="store_true")),
                      ("--every", dict(type=int, default=4)),
                      ("--procs", dict(type=int, default=1)),
                      ("--no-loader", dict(action="store_true")),
                      ("--cuda", dict(action="store_true")))
    if args.procs > 1 and "LOCAL_RANK" not in os.environ:
        os.execv(sys.executable, [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", str(args.procs), __file__] + sys.argv[1:])
    # whole lines, one write each: the ranks share one pipe
    sys.stdout.reconfigure(line_buffering=True, write_through=False)
    if args.cuda and not torch.cuda.is_available():
        sys.exit("accelerate_job.py --cuda: torch sees no CUDA device")
    accelerator = Accelerator(cpu=not args.cuda)
    set_seed(1234)
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if args.no_loader:  # every draw from torch's generator, in the loop
        model, opt = accelerator.prepare(model, opt)
        loader = Drawn()
    else:
        loader = torch.utils.data.DataLoader(
            Augmented(), batch_size=BATCH, shuffle=True,
            num_workers=args.workers)
        model, opt, loader = accelerator.prepare(model, opt, loader)
    if not args.plain:
        rngsnap.integrations.accelerate.attach(accelerator)  # rngsnap

    done = 0
    if args.resume:  # the last whole checkpoint: folders appear renamed
        done = max(int(d[5:]) for d in os.listdir(args.dir)
                   if d.startswith("step-") and not d.endswith(".tmp"))
        accelerator.load_state(os.path.join(args.dir, "step-%d" % done))
        resumed(done)
    first, skip = divmod(done, len(loader))
    if args.resume and not (args.plain or args.no_loader):
        rngsnap.integrations.accelerate.resume_at(loader, first, skip)  # rngsnap

    loss_fn, rank, step = nn.BCEWithLogitsLoss(), accelerator.process_index, done
    for epoch in range(first, EPOCHS):
        batches = loader
        if epoch == first and skip and args.no_loader:
            batches = Drawn(skip)
        elif epoch == first and skip and args.plain:
            batches = accelerator.skip_first_batches(loader, skip)
        for x, y in batches:
            x, y = x.to(accelerator.device), y.to(accelerator.device)
            opt.zero_grad()
            loss = loss_fn(model(x), y)  # dropout: torch's generator
            accelerator.backward(loss)
            opt.step()
            step += 1
            print("loss", rank, loss.item().hex(), flush=True)
            if step % args.every == 0:
                path = os.path.join(args.dir, "step-%d" % step)
                accelerator.save_state(path + ".tmp")
                accelerator.wait_for_everyone()
                if accelerator.is_main_process:
                    os.replace(path + ".tmp", path)  # whole, or not there
                accelerator.wait_for_everyone()
                committed(step)
    params = b"".join(p.detach().cpu().numpy().tobytes()
                      for p in model.parameters())
    print("params", rank, hashlib.sha256(params).hexdigest(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
