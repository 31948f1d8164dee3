#!/usr/bin/env python3
"""compare.py - rngsnap-bench figures side by side with a baseline.

    rngsnap-bench --json > new.jsonl            (or its normal output)
    python3 tests/bench/compare.py old.jsonl new.jsonl

Both files are rngsnap-bench outputs; only their JSON lines are read.  A
row is identified by its bench name and every field that is not a
measured figure (strings and integers: dist, bytes, threads, ...); its
figures are the float fields (gbps, ns, us, ...).  Prints one line per
row found in both files: each figure before and now, and now/before.
No thresholds: which way is better depends on the figure (GB/s up, ns
down), so the ratio is only shown.
"""
import json
import sys


def rows(path):
    """{identity: {figure: value}} for every JSON line of the file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("bench") == "note":
                continue
            ident = tuple((k, v) for k, v in r.items()
                          if not isinstance(v, float))
            out[ident] = {k: v for k, v in r.items() if isinstance(v, float)}
    return out


def label(ident):
    return " ".join(f"{v}" if k == "bench" else f"{k}={v}" for k, v in ident)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: compare.py BASELINE NEW", file=sys.stderr)
        return 2
    old, new = rows(argv[1]), rows(argv[2])
    both = [i for i in new if i in old]
    if not both:
        print("no row of the new run is in the baseline", file=sys.stderr)
        return 1
    for ident in both:
        figs = []
        for k, now in new[ident].items():
            was = old[ident].get(k)
            if was is None:
                continue
            ratio = f"{now / was:.2f}x" if was else "-"
            figs.append(f"{k} {was:g} -> {now:g} ({ratio})")
        print(f"{label(ident)}: {'; '.join(figs)}")
    only_new = [i for i in new if i not in old]
    for ident in only_new:
        figs = ", ".join(f"{k} {v:g}" for k, v in new[ident].items())
        print(f"{label(ident)}: new row, {figs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
