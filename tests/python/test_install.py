"""Installed packages import and draw with no RNGSNAP_* variables: `meson
install` into a prefix (the installed default rng.ini and plugin folder) and
pip install --no-build-isolation through meson-python (the wheel's own
plugins and rng.ini; pyproject.toml, python/meson.build).  The module holds
the core, so no librngsnap.so is looked up."""
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


def _copy_sources(tmp_path):
    """A copy of the sources, so that no build folder lands in the tree."""
    if not SRC:
        pytest.skip("RNGSNAP_SOURCE_ROOT is not set (run through meson test)")
    src = tmp_path / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns(
        "build*", ".git", ".mesonpy-*", "__pycache__"))
    return src


def _draw_elsewhere(site, cwd):
    """Import rngsnap from site with no RNGSNAP_* variables and draw."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RNGSNAP_")}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", DRAW], capture_output=True,
                       text=True, env=env, cwd=str(cwd))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def _py_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files
                  if f.endswith(".py"))


def _holds_every_module(pkg):
    """The installed package holds every .py file of python/rngsnap at its
    own path: the subpackages of each layer (tests/python/test_layers.py)
    are installed too."""
    assert _py_files(str(pkg)) == _py_files(
        os.path.join(SRC, "python", "rngsnap"))


def _words_here():
    c = rngsnap.Context()
    c.seed_all(77)
    words = str(c.stream("cpu", 0, "augment").generate("u64", 4).tolist())
    c.close()
    return words


def test_meson_install_prefix(tmp_path):
    src = _copy_sources(tmp_path)
    prefix, build = tmp_path / "prefix", tmp_path / "build"
    for cmd in (["meson", "setup", str(build), str(src), "--prefix",
                 str(prefix), "-Dtests=disabled", "-Dcuda=disabled"],
                ["ninja", "-C", str(build)],
                ["meson", "install", "-C", str(build)]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    inits = list(prefix.glob("**/rngsnap/__init__.py"))
    assert len(inits) == 1, inits
    site = inits[0].parent.parent
    _holds_every_module(inits[0].parent)
    where, config, words = _draw_elsewhere(site, tmp_path)
    assert config == '["%s", "installed default"]' % (
        prefix / "etc" / "rngsnap" / "rng.ini")
    assert words == _words_here()


def test_pip_install_target(tmp_path):
    for mod in ("pip", "mesonpy"):
        if subprocess.run([sys.executable, "-c", "import " + mod]).returncode:
            pytest.skip("%s is not installed for %s" % (mod, sys.executable))
    src = _copy_sources(tmp_path)
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-deps", "--no-index",
                        "--target", str(target), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # The wheel holds the package only: no lib/, include/, etc/ and no
    # .rngsnap.mesonpy.libs (the library's own install folders); bin/ has
    # pip's console script alone, which runs the package's own command.
    assert sorted(p.name for p in target.iterdir()) == [
        "bin", "rngsnap", "rngsnap-0.1.0.dist-info"]
    assert [p.name for p in (target / "bin").iterdir()] == ["rngsnap"]
    assert (target / "bin" / "rngsnap").read_bytes().startswith(b"#!")
    assert (target / "rngsnap" / "plugins" / "rngsnap_cpu.so").exists()
    assert os.access(target / "rngsnap" / "_bin" / "rngsnap", os.X_OK)
    _holds_every_module(target / "rngsnap")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RNGSNAP_")}
    env["PYTHONPATH"] = str(target)
    r = subprocess.run([str(target / "bin" / "rngsnap"), "backends"],
                       capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("config: %s (package)\n" % (
        target / "rngsnap" / "rng.ini"))
    where, config, words = _draw_elsewhere(target, tmp_path)
    assert where == str(target / "rngsnap" / "__init__.py")
    assert config == '["%s", "package"]' % (target / "rngsnap" / "rng.ini")
    assert words == _words_here()  # the same numbers as the build tree
