#!/usr/bin/env python3
"""pip_verdict.py LOG: why a `pip install` failed, from pip's own words,
for the scripts that make the pinned environments (scripts/python-env.sh,
scripts/wheel/build.sh): skip only when the index could not be reached;
a pin the index refused, or any other failure, is a broken build.

LOG is pip's debug log (`pip install --log LOG ...`): at the default
verbosity pip does not say that an index page could not be fetched (with
--retries 0 not even a warning), only "(from versions: none)", which is
also what an index that has no such project answers.  The debug log has
"Could not fetch URL <url>: connection error: ...".

Prints one line and exits:
  77  "unreachable: ..."  an index page (or a file) of a project whose
                          requirement failed could not be fetched: pip
                          could not ask the index, so the pin was never
                          judged (a find-links folder or a file:// index
                          may still have listed versions)
  1   "refused: ..."      the index answered and no version matches the
                          pin ("from versions: ..." lists what it has, or
                          none: no such project)
  1   "failed: ..."       anything else (a build error, a hash mismatch);
                          also when LOG names no failure at all
"""
import re
import sys

# A requirement no version matched: the project's name, as pip prints it.
_NO_MATCH = re.compile(r"ERROR: No matching distribution found for "
                       r"([A-Za-z0-9][A-Za-z0-9._-]*)")
_VERSIONS = re.compile(r"Could not find a version that satisfies the "
                       r"requirement ([A-Za-z0-9][A-Za-z0-9._-]*)\S* "
                       r"\(from versions: ([^)]*)\)")
# An index page pip gave up on (pip._internal.index.collector logs it at
# debug level): its URL ends in the project's normalized name.  A 404 is
# an answer (no such project there), not a failure to reach it.
_FETCH = re.compile(r"Could not fetch URL (\S+?): (connection error|timed "
                    r"out|There was a problem confirming the ssl "
                    r"certificate|.*Max retries exceeded)")
# A file download (or an index page, with retries) that failed for good
# on a connection: pip's OSError report.
_OSERROR = re.compile(r"Could not install packages due to an OSError: .*"
                      r"(Max retries exceeded|NewConnectionError|"
                      r"ConnectTimeoutError|ProxyError|NameResolutionError|"
                      r"Connection refused|Network is unreachable|"
                      r"Temporary failure in name resolution)")


def _normal(name):
    """PEP 503's normalized project name (what index URLs hold)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def verdict(text):
    """(exit code, line) for pip's debug log text."""
    lines = text.splitlines()
    oserror = next((ln for ln in lines if _OSERROR.search(ln)), None)
    if oserror is not None:
        return 77, "unreachable: " + _strip(oserror)
    failed = [_normal(m.group(1)) for m in map(_NO_MATCH.search, lines)
              if m]
    if failed:
        unfetched = [m.group(1) for m in map(_FETCH.search, lines) if m]
        for name in failed:
            url = next((u for u in unfetched
                        if _normal(u.rstrip("/").rsplit("/", 1)[-1]) == name),
                       None)
            if url is not None:
                return 77, ("unreachable: pip could not fetch %s (a "
                            "connection failure), so no index judged the "
                            "pin of %s" % (url, name))
        versions = {_normal(m.group(1)): m.group(2)
                    for m in map(_VERSIONS.search, lines) if m}
        name = failed[0]
        have = versions.get(name, "?")
        if have == "none":
            return 1, ("refused: the index has no project %s (from "
                       "versions: none)" % name)
        if len(have) > 200:
            have = have[:200] + "..."
        return 1, ("refused: the index has no version of %s matching the "
                   "pin (from versions: %s)" % (name, have))
    error = next((ln for ln in lines if "ERROR" in ln or "error:" in ln),
                 None)
    return 1, "failed: " + (_strip(error) if error else
                            "pip's log names no failure")


def _strip(line):
    """The line without the --log file's timestamp, shortened."""
    line = re.sub(r"^\d{4}-\d\d-\d\dT[\d:,]+ ", "", line.strip())
    return line if len(line) <= 300 else line[:300] + "..."


def main(argv):
    if len(argv) != 2:
        print("usage: pip_verdict.py PIP_DEBUG_LOG", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        print("failed: cannot read pip's log %s (%s)" % (argv[1], e))
        return 1
    code, line = verdict(text)
    print(line)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
