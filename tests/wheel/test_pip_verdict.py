"""scripts/pip_verdict.py on real pip output (issue 31, item 8): a pin
the index refuses is a failure (1), an index that cannot be reached a skip
(77), whatever the machine's own pip configuration adds (find-links
folders and file:// indexes answer even when the index does not).

Each case runs `python -m pip download --no-deps` with --log, offline:
the index is a folder made here (file://) or the loopback's discard port
(http://127.0.0.1:9, nothing listens: connection refused), pip's own
configuration off (PIP_CONFIG_FILE=/dev/null, no PIP_* variables) and
--retries 0, so that pip says nothing on its console about the index it
could not reach (only "from versions: none"), as with a real outage
after its retries.  Run: python3 tests/wheel/test_pip_verdict.py; exit
0 passed, 1 failed, 77 no pip for this interpreter.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERDICT = os.path.join(HERE, "..", "..", "scripts", "pip_verdict.py")
WHEEL = "rngsnap_demo-1.0-py3-none-any.whl"  # listed, never downloaded


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _index(root):
    """A PEP 503 index with one project, rngsnap-demo 1.0, and a
    find-links folder holding the same file."""
    project = os.path.join(root, "simple", "rngsnap-demo")
    links = os.path.join(root, "links")
    os.makedirs(project)
    os.makedirs(links)
    for folder in (project, links):
        open(os.path.join(folder, WHEEL), "wb").close()
    with open(os.path.join(project, "index.html"), "w") as f:
        f.write('<html><body><a href="%s">%s</a></body></html>'
                % (WHEEL, WHEEL))
    return "file://" + os.path.join(root, "simple"), links


def _verdict(root, name, *pip_args):
    log = os.path.join(root, name + ".log")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                        "--no-deps", "--retries", "0", "--log", log,
                        "-d", os.path.join(root, "dl"), *pip_args],
                       env=_env(), capture_output=True, text=True)
    assert r.returncode != 0, "%s: pip succeeded:\n%s" % (name, r.stdout)
    v = subprocess.run([sys.executable, VERDICT, log], capture_output=True,
                       text=True)
    return v.returncode, v.stdout.strip(), r.stderr


CASES = [
    # (name, pip arguments, exit code, start of the line)
    ("refused pin", lambda idx, links: [
        "--index-url", idx, "rngsnap-demo==9.9"],
     1, "refused: the index has no version of rngsnap-demo matching the "
        "pin (from versions: 1.0)"),
    ("no such project", lambda idx, links: [
        "--index-url", idx, "rngsnap-nothing==1.0"],
     1, "refused: the index has no project rngsnap-nothing (from versions: "
        "none)"),
    ("unreachable index", lambda idx, links: [
        "--index-url", "http://127.0.0.1:9/simple", "rngsnap-demo==1.0"],
     77, "unreachable: pip could not fetch "
         "http://127.0.0.1:9/simple/rngsnap-demo/ (a connection failure), "
         "so no index judged the pin of rngsnap-demo"),
    # find-links still lists 1.0: the index itself never answered
    ("unreachable index, find-links answers", lambda idx, links: [
        "--index-url", "http://127.0.0.1:9/simple", "--find-links", links,
        "rngsnap-demo==9.9"],
     77, "unreachable: pip could not fetch "
         "http://127.0.0.1:9/simple/rngsnap-demo/"),
    # one index refused the pin, another could not be asked: it might
    # have had it, so no verdict on the pin (a skip)
    ("refused by one index, another down", lambda idx, links: [
        "--index-url", idx, "--extra-index-url",
        "http://127.0.0.1:9/simple", "rngsnap-demo==9.9"],
     77, "unreachable: pip could not fetch "
         "http://127.0.0.1:9/simple/rngsnap-demo/"),
    ("not a requirement", lambda idx, links: [
        "--index-url", idx, "rngsnap-demo=9.9"],
     1, "failed: ERROR: Invalid requirement"),
]


def main():
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        print("SKIP: no pip for %s" % sys.executable)
        return 77
    bad = 0
    with tempfile.TemporaryDirectory(prefix="pip_verdict.") as root:
        idx, links = _index(root)
        for name, args, code, start in CASES:
            got, line, err = _verdict(root, name.replace(" ", "_")
                                      .replace(",", ""), *args(idx, links))
            ok = got == code and line.startswith(start)
            bad += not ok
            print("%s: %s (exit %d) %s" % ("ok" if ok else "FAIL", name, got,
                                           line))
            if not ok:
                print("  want exit %d, a line starting %r\n  pip said:\n%s"
                      % (code, start, err))
    # The log of a successful install names no failure: never a skip.
    with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
        f.write("Successfully installed nothing\n")
        f.flush()
        v = subprocess.run([sys.executable, VERDICT, f.name],
                           capture_output=True, text=True)
        ok = v.returncode == 1 and v.stdout.startswith("failed: ")
        bad += not ok
        print("%s: a log with no failure (exit %d) %s" % (
            "ok" if ok else "FAIL", v.returncode, v.stdout.strip()))
    print("%d failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
