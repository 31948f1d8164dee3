"""Shared fixtures of the rngsnap Python tests.

The meson test sets PYTHONPATH (source python/ and the build's module
folder) and RNGSNAP_CONFIG (the build tree's rng.ini, cpu backend with the
streams default, dropout, augment)."""
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
