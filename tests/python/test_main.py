"""`python -m rngsnap` (rngsnap/__main__.py) execs the C command: in the
build tree, <build>/tools/rngsnap, so its output and exit status are that
command's.  The wheel's own command (rngsnap/_bin/rngsnap) is tested by
scripts/wheel/smoke.sh (meson test wheel)."""
import os
import subprocess
import sys

import pytest

import rngsnap

BUILD = os.environ.get("RNGSNAP_BUILD_ROOT")


def _run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("args", [["backends", "--json"], ["verify"],
                                  ["nosuchcommand"], ["--version"]])
def test_python_m_is_the_build_tree_command(args):
    if not BUILD or not rngsnap._in_build_tree():
        pytest.skip("not the build tree's module (run through meson test)")
    c = _run([os.path.join(BUILD, "tools", "rngsnap")] + args)
    p = _run([sys.executable, "-m", "rngsnap"] + args)
    assert p == c


def test_no_command_says_where_it_is():
    code = ("import sys, rngsnap, rngsnap.__main__ as m\n"
            "m._PACKAGED = '/nonexistent/_bin/rngsnap'\n"
            "rngsnap._in_build_tree = lambda: False\n"
            "sys.exit(m.main())\n")
    rc, out, err = _run([sys.executable, "-c", code])
    import rngsnap.__main__ as m  # runs nothing: main() is not called
    pkg = os.path.dirname(os.path.abspath(m.__file__))
    assert (rc, out) == (2, "")
    assert err == ("rngsnap: the rngsnap command is not inside this install "
                   "of the package (%s); it comes with the wheel (pip install "
                   "rngsnap, or pip install . from the sources); a `meson "
                   "install` puts it in the prefix's bin folder: run it from "
                   "there\n" % pkg)
