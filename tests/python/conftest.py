"""Shared fixtures of the rngsnap Python tests.

The meson test sets PYTHONPATH (source python/ and the build's module
folder) and RNGSNAP_CONFIG (the build tree's rng.ini, cpu backend with the
streams default, dropout, augment)."""
import json
import os
import subprocess
import sys
import threading

import pytest

import rngsnap


@pytest.fixture
def ctx():
    c = rngsnap.Context()
    c.seed_all(1234)
    yield c
    c.close()


def run_py(code, *args, check=True):
    """Run code in a fresh interpreter with this process's environment;
    returns its stdout."""
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                       capture_output=True, text=True, env=os.environ.copy())
    if check and r.returncode != 0:
        raise AssertionError("subprocess failed (%d):\n%s\n%s"
                             % (r.returncode, r.stdout, r.stderr))
    return r


def spawn_ranks(code, n, rdv, *args):
    """Run code as n processes (argv: rank, n, rdv, *args), e.g. the ranks
    of a torch.distributed job rendezvousing at file rdv; each prints a
    JSON object with "rank" as its last line.  Returns them in rank
    order, after every process exited 0."""
    procs = [subprocess.Popen([sys.executable, "-c", code, str(r), str(n),
                               str(rdv), *map(str, args)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=os.environ.copy())
             for r in range(n)]
    outs = []
    for p in procs:
        o, e = p.communicate(timeout=300)
        assert p.returncode == 0, e
        outs.append(json.loads(o.strip().splitlines()[-1]))
    return sorted(outs, key=lambda x: x["rank"])


def while_drawing(draw, probe, attempts=20):
    """Run draw() in another thread and probe() in this one, over and over
    until the draw returns; the first result of probe() that is not None
    is returned.  A probe that can only answer while the draw is inside
    the C call (a buffer export it holds, a stream it has taken) sees it
    there whatever the machine's speed: each draw is repeated until one
    is caught, up to `attempts` draws (then None)."""
    for _ in range(attempts):
        done = threading.Event()

        def run():
            try:
                draw()
            finally:
                done.set()

        t = threading.Thread(target=run)
        t.start()
        try:
            while not done.is_set():
                got = probe()
                if got is not None:
                    return got
        finally:
            t.join()
    return None


def export_held(buf):
    """A probe for while_drawing: True while resizing the array.array buf
    is refused (a call holds its buffer), else None, buf left as it was."""
    def probe():
        try:
            buf.append(0)
        except BufferError:
            return True
        buf.pop()
        return None
    return probe
