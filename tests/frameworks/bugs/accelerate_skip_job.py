"""accelerate resumed inside an epoch with shuffle=True and
accelerator.skip_first_batches, as accelerate's docs show it (plain), or
with rngsnap's ResumableSampler in place of shuffle=True (--rngsnap).

Plain: load_state puts torch's generator back to where it stood at the
save, inside the epoch; the loader's RandomSampler draws the resumed
epoch's order from it at iter(), so the order is not the one the killed
run was taking, and skip_first_batches skips the first batches of another
order: some samples come twice in that epoch, others never.

    python3 accelerate_skip_job.py --dir DIR [--resume] [--rngsnap]
    (a checkpoint every SAVE_EVERY steps, folder step-<n>)
"""
import os

import torch
from accelerate import Accelerator
from torch import nn

from bugjob import Indexed, step_line
from killpoint import committed  # the test harness's lines only
from toyjob import net, parse_args

EPOCHS, BATCH, SAMPLES, SAVE_EVERY = 2, 4, 64, 5  # 16 steps an epoch


def main():
    args = parse_args(("--rngsnap", dict(action="store_true")))
    accelerator = Accelerator()
    torch.manual_seed(1234)
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = Indexed(SAMPLES)
    done = 0
    if args.resume:  # the last whole checkpoint
        done = max(int(d.split("-")[1]) for d in os.listdir(args.dir)
                   if d.startswith("step-") and not d.endswith(".tmp"))
    if args.rngsnap:
        import rngsnap
        import rngsnap.torch
        from accelerate_recipe import RngState
        ctx = rngsnap.Context(resume=args.resume)
        if not args.resume:
            ctx.seed_all(1234)
        sampler = rngsnap.torch.ResumableSampler(
            ctx, ctx.stream("cpu", 0, "augment"), len(data), BATCH, EPOCHS)
        loader = torch.utils.data.DataLoader(rngsnap.torch.KeyedDataset(data),
                                             batch_sampler=sampler)
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=BATCH,
                                             shuffle=True)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    if args.rngsnap:
        tracker = rngsnap.torch.track(ctx)
        accelerator.register_for_checkpointing(RngState(ctx, accelerator))
        accelerator.register_load_state_pre_hook(
            lambda models, input_dir: tracker.check_order())
    if done:
        accelerator.load_state(os.path.join(args.dir, "step-%d" % done))

    def epochs():  # the epochs and their batches, from the checkpoint on
        if args.rngsnap:  # the sampler's position is in the checkpoint
            for epoch in sampler.epochs():
                yield epoch, sampler.batches(loader)
            return
        per_epoch = len(loader)
        for epoch in range(done // per_epoch, EPOCHS):
            skip = done - epoch * per_epoch
            yield epoch, (accelerator.skip_first_batches(loader, skip)
                          if skip > 0 else loader)

    step, loss_fn = done, nn.BCEWithLogitsLoss()
    for epoch, batches in epochs():
        for x, y, index in batches:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            accelerator.backward(loss)
            opt.step()
            step_line(epoch, index, x, loss)
            step += 1
            if step % SAVE_EVERY == 0:
                path = os.path.join(args.dir, "step-%d" % step)
                accelerator.save_state(path + ".tmp")
                os.replace(path + ".tmp", path)  # whole, or not there
                committed(step)
    if args.rngsnap:
        ctx.close()


if __name__ == "__main__":
    main()
