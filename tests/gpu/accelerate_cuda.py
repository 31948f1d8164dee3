"""accelerate on cuda:0 with rngsnap.integrations.accelerate, killed and
resumed (tests/gpu/device_check.sh; no GPU in CI).

tests/integrations/accelerate_job.py --cuda runs once uninterrupted, then
once SIGKILLed right after its save_state at step 4 (of 12) and resumed
with load_state in a new process.  Pass: the resumed run's generators
(killpoint's digests, torch.cuda:0 among them) are the ones the killed run
saved, and the killed + resumed runs print every loss and the final
parameters of the uninterrupted run, bit for bit.  The model's dropout
draws from torch's CUDA generator, so a CUDA state not restored changes
the losses after the resume.

    python3 tests/gpu/accelerate_cuda.py [--cpu]

Exit 0 pass, 1 fail, 77 skipped (no CUDA torch, no accelerate).  --cpu
runs the same on the CPU (a dry run of this driver on a machine without
a GPU)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integrations"))

JOB = "accelerate_job.py"
KILL_AT = 4


def main():
    cpu = "--cpu" in sys.argv[1:]
    try:
        import torch
        import accelerate
    except ImportError as e:
        print("skipped: %s" % e)
        return 77
    if not cpu and not torch.cuda.is_available():
        print("skipped: torch %s sees no CUDA device" % torch.__version__)
        return 77
    from jobs import killed_at, losses, params, run

    print("torch %s, accelerate %s, %s" % (
        torch.__version__, accelerate.__version__,
        "cpu (--cpu)" if cpu else torch.cuda.get_device_name(0)))
    dev = [] if cpu else ["--cuda"]
    with tempfile.TemporaryDirectory() as tmp:
        whole_dir = os.path.join(tmp, "whole")
        kill_dir = os.path.join(tmp, "killed")
        os.mkdir(whole_dir)
        os.mkdir(kill_dir)
        rc, whole, err = run(JOB, "--dir", whole_dir, *dev)
        if rc != 0:
            print("FAIL: the uninterrupted run exited %d:\n%s"
                  % (rc, err[-3000:]))
            return 1
        a = killed_at(JOB, KILL_AT, "--dir", kill_dir, *dev)
        rc, b, err = run(JOB, "--dir", kill_dir, "--resume", *dev)
        if rc != 0:
            print("FAIL: the resumed run exited %d:\n%s" % (rc, err[-3000:]))
            return 1
    saved = [x for x in a if x.startswith("checkpoint %d " % KILL_AT)]
    back = [x for x in b if x.startswith("resumed ")]
    print("saved:    " + (saved[0] if saved else "(none)"))
    print("restored: " + (back[0] if back else "(none)"))
    want, got = losses(whole), losses(a) + losses(b)
    checks = [
        ("12 losses and one params line in the uninterrupted run",
         len(want) == 12 and len(params(whole)) == 1),
        ("torch.cuda:0 is among the generators digested" +
         (" (not asked: --cpu)" if cpu else ""),
         cpu or (len(saved) == 1 and " cuda:0=" in saved[0])),
        ("load_state gave back the generators saved at step %d" % KILL_AT,
         len(saved) == 1 and len(back) == 1 and
         back[0].replace("resumed", "checkpoint", 1) == saved[0]),
        ("the killed run's %d losses == the uninterrupted run's first %d"
         % (len(losses(a)), KILL_AT), losses(a) == want[:KILL_AT]),
        ("killed + resumed: every loss (%d) == the uninterrupted run's (%d)"
         % (len(got), len(want)), got == want),
        ("the final parameters == the uninterrupted run's",
         params(b) == params(whole) and len(params(b)) == 1),
    ]
    failed = 0
    for what, ok in checks:
        print("  %s: %s" % ("ok" if ok else "FAIL", what))
        failed += not ok
    if failed:
        print("uninterrupted:", *want, sep="\n  ")
        print("killed + resumed:", *got, sep="\n  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
