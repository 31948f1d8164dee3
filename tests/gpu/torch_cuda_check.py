"""torch CUDA generators through rngsnap.torch (issue 10), one phase of
the check that tests/gpu/run.sh and tests/gpu/device_check.sh run twice:

    python3 torch_cuda_check.py save CKPT   # seed, draw, track, save
    python3 torch_cuda_check.py load CKPT   # a new process: track, load

Each phase then draws on every visible device and on the CPU and prints
the numbers (hex); the two processes' outputs must be equal bit for bit.
Needs a CUDA build of torch and the rngsnap module on PYTHONPATH."""
import sys

import torch

import rngsnap
import rngsnap.torch

phase, ck = sys.argv[1], sys.argv[2]
n = torch.cuda.device_count()
ctx = rngsnap.Context(resume=(phase == "load"))
if phase == "save":
    ctx.seed_all(7)
    torch.manual_seed(5)
    torch.cuda.manual_seed_all(100)
    for i in range(n):  # a different offset on each device
        torch.rand(1000 * (i + 1), device="cuda:%d" % i)
t = rngsnap.torch.track(ctx, fingerprint="strict")
want = ["torch.cuda:%d" % i for i in range(n)]
assert [x for x in t.names if x.startswith("torch.cuda")] == want, t.names
if phase == "save":
    ctx.save(ck)
else:
    ctx.load(ck)
for i in range(n):
    print("cuda:%d" % i,
          torch.rand(8, device="cuda:%d" % i).cpu().numpy().tobytes().hex(),
          torch.randn(3, device="cuda:%d" % i).cpu().numpy().tobytes().hex())
print("cpu", torch.rand(4).numpy().tobytes().hex())
