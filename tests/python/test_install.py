"""pip install --no-build-isolation of the source tree (meson-python) gives a
package that imports and draws with no RNGSNAP_CONFIG: the module holds the
core, the wheel holds the plugins and an rng.ini (pyproject.toml,
python/meson.build)."""
import os
import shutil
import subprocess
import sys

import pytest

import rngsnap

SRC = os.environ.get("RNGSNAP_SOURCE_ROOT")

DRAW = ("import rngsnap, json\n"
        "c = rngsnap.Context(); c.seed_all(77)\n"
        "print(rngsnap.__file__)\n"
        "print(json.dumps(rngsnap.find_config()))\n"
        "print(json.dumps(c.stream('cpu', 0, 'augment')"
        ".generate('u64', 4).tolist()))\n")


def test_pip_install_target(tmp_path):
    for mod in ("pip", "mesonpy"):
        if subprocess.run([sys.executable, "-c", "import " + mod]).returncode:
            pytest.skip("%s is not installed for %s" % (mod, sys.executable))
    if not SRC:
        pytest.skip("RNGSNAP_SOURCE_ROOT is not set (run through meson test)")
    # A copy of the sources, so that meson-python's build folder never
    # lands in the shared tree.
    src = tmp_path / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns(
        "build*", ".git", ".mesonpy-*", "__pycache__"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-deps", "--no-index",
                        "--target", str(target), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "rngsnap" / "plugins" / "rngsnap_cpu.so").exists()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RNGSNAP_")}
    env["PYTHONPATH"] = str(target)
    r = subprocess.run([sys.executable, "-c", DRAW], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    where, config, words = r.stdout.splitlines()
    assert where == str(target / "rngsnap" / "__init__.py")
    assert config == '["%s", "package"]' % (target / "rngsnap" / "rng.ini")
    # the same numbers as the module built here
    c = rngsnap.Context()
    c.seed_all(77)
    assert words == str(c.stream("cpu", 0, "augment").generate(
        "u64", 4).tolist())
    c.close()
