"""Run a test job uninterrupted, or SIGKILLed at a checkpoint it signalled
(killpoint.committed: it holds there while RNGSNAP_HOLD_AT names it) and
resumed in a new process.  No timing: the kill lands at the job's line."""
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HANG_S = 300  # a job not ended by then hangs (a normal one: seconds)


def _env(extra=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, os.path.join(HERE, "..", "frameworks"),
         env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def run(job, *args):
    """(exit code, stdout lines, stderr) of a whole run."""
    p = subprocess.run([sys.executable, os.path.join(HERE, job)] + list(args),
                       capture_output=True, text=True, env=_env(),
                       timeout=HANG_S)
    return p.returncode, p.stdout.splitlines(), p.stderr


def killed_at(job, tag, *args):
    """The lines of a run SIGKILLed once it printed checkpoint <tag>."""
    p = subprocess.Popen([sys.executable, os.path.join(HERE, job)] +
                         list(args), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, env=_env({"RNGSNAP_HOLD_AT": str(tag)}),
                         start_new_session=True)
    lines = []
    try:
        for line in p.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("checkpoint %s " % tag):
                break
        else:
            raise AssertionError("the job ended without checkpoint %s:\n%s"
                                 % (tag, "\n".join(lines[-20:])))
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    return lines


def losses(lines):
    return [x for x in lines if x.startswith("loss ")]


def params(lines):
    return [x for x in lines if x.startswith("params ")]
