#!/usr/bin/env python3
"""test_bench_tools.py - the measuring tools docs/performance.md tells users
to run: spread.py's median and min-max over runs, and rngsnap-bench's
--cpu-time.  Checks what the tools print, never how fast anything ran.

    python3 tests/bench/test_bench_tools.py BUILD/tests/bench/rngsnap-bench
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPREAD = os.path.join(HERE, "spread.py")
BENCH = None  # set from argv


def spread(*args):
    return subprocess.run([sys.executable, SPREAD, *args],
                          capture_output=True, text=True)


class SpreadTest(unittest.TestCase):
    def runs(self, rows_per_run):
        """One file per run; each row a dict written as a JSON line (with
        a text line around it, as rngsnap-bench prints)."""
        d = tempfile.mkdtemp()
        paths = []
        for i, rows in enumerate(rows_per_run):
            p = os.path.join(d, f"run{i}.txt")
            with open(p, "w", encoding="utf-8") as f:
                f.write("rngsnap-bench: median of 7 runs\n")
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            paths.append(p)
        return paths

    def row(self, what, gbps, best):
        return {"bench": "path_fill", "path": "avx512", "what": what,
                "bytes": 65536, "gbps": gbps, "best_gbps": best}

    def test_median_and_range_over_runs(self):
        files = self.runs([
            [self.row("u32", 1.0, 1.5), self.row("f32", 4.0, 4.5)],
            [self.row("u32", 2.0, 2.5), self.row("f32", 5.0, 5.5)],
            [self.row("u32", 6.0, 6.5)],  # f32 missing from this run
        ])
        r = spread(*files)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "path_fill path=avx512 what=u32 bytes=65536: gbps 2.00 "
            "(1.00-6.00, 3 runs)"])
        r = spread("--figure", "best_gbps", *files)
        self.assertIn("best_gbps 2.50 (1.50-6.50, 3 runs)", r.stdout)

    def test_bench_numpy_lines(self):
        # bench_numpy.py writes json.dumps lines (spaces after separators)
        rows = [{"bench": "numpy_side", "impl": "torch", "dist": "f32",
                 "bytes": 1048576, "gbps": g, "best_gbps": g}
                for g in (0.5, 0.75)]
        r = spread(*self.runs([[rows[0]], [rows[1]]]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("impl=torch dist=f32 bytes=1048576: gbps 0.62 "
                      "(0.50-0.75, 2 runs)", r.stdout)

    def test_no_common_row(self):
        r = spread("--figure", "ns", *self.runs([[self.row("u32", 1, 1)]]))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "no row has ns in every run")


class CpuTimeTest(unittest.TestCase):
    def test_paths_section_on_the_cpu_clock(self):
        r = subprocess.run([BENCH, "--only", "paths", "--quick", "--runs",
                            "1", "--cpu-time", "--json"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [json.loads(l) for l in r.stdout.splitlines()
                 if l.startswith("{")]
        notes = [l["text"] for l in lines if l["bench"] == "note"]
        self.assertTrue(any(n.startswith("--cpu-time: the fill and paths "
                                         "sections count only the time "
                                         "this thread ran") for n in notes),
                        notes)
        fills = [l for l in lines if l["bench"] == "path_fill"]
        if not fills:  # a CPU without SIMD paths: nothing to time
            self.assertIn("no SIMD path on this CPU: nothing to compare",
                          " ".join(notes))
            return
        self.assertTrue(all(l["gbps"] > 0 for l in fills))

    def test_unknown_option_is_refused(self):
        r = subprocess.run([BENCH, "--cpu-clock"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("[--cpu-time]", r.stderr)


if __name__ == "__main__":
    BENCH = sys.argv.pop(1)
    unittest.main()
