"""pytest of rngsnap.integrations against the real frameworks.  A run in
which every test was skipped (the framework does not import for this
interpreter) exits 77, so that Meson reports it skipped, never passed."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "frameworks")]

_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_collectreport(report):
    # a module-level importorskip skips at collection: no test report
    if report.outcome == "skipped":
        _outcomes["skipped"] += 1


def pytest_sessionfinish(session, exitstatus):
    # 5: nothing collected (every module skipped at collection)
    if exitstatus in (0, 5) and _outcomes["skipped"] and not (
            _outcomes["passed"] or _outcomes["failed"]):
        session.exitstatus = 77
