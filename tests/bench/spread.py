#!/usr/bin/env python3
"""spread.py - one figure per row over several rngsnap-bench runs.

    for i in 1 2 3 4 5 6 7; do
        build/tests/bench/rngsnap-bench --only paths --runs 7 > run$i.jsonl
    done
    python3 tests/bench/spread.py run*.jsonl [--figure gbps]

Each file is one run of rngsnap-bench (its JSON lines are read, as
compare.py reads them).  For every row present in all runs, prints the
median of the runs' figures and their min-max: the spread a person sees
running the same command again on the same machine.  Rows are printed
in the order of the first file.  The figure is gbps unless --figure
names another float field (best_gbps, vs_native_loop, ns, us, ...).
"""
import argparse
import statistics
import sys

from compare import label, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="rngsnap-bench outputs")
    ap.add_argument("--figure", default="gbps")
    args = ap.parse_args()
    runs = [rows(p) for p in args.runs]
    shown = 0
    for ident, figs in runs[0].items():
        vals = [r[ident][args.figure] for r in runs
                if ident in r and args.figure in r[ident]]
        if args.figure not in figs or len(vals) != len(runs):
            continue
        print(f"{label(ident)}: {args.figure} {statistics.median(vals):.2f} "
              f"({min(vals):.2f}-{max(vals):.2f}, {len(vals)} runs)")
        shown += 1
    if shown == 0:
        print(f"no row has {args.figure} in every run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
