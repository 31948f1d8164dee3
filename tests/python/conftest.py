"""Shared fixtures of the rngsnap Python tests.

The meson test sets PYTHONPATH (source python/ and the build's module
folder) and RNGSNAP_CONFIG (the build tree's rng.ini, cpu backend with the
streams default, dropout, augment)."""
import os
import subprocess
import sys

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
