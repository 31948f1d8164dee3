#!/usr/bin/env bash
# test_train.sh - the user guide's training loop (docs/examples/train.c)
# resumes bit for bit: fresh run to step N saving at K, a fresh process
# resuming from K, same final model; another seed gives another model.
# usage: test_train.sh TRAIN_EXE INI
set -u
train=$1 ini=$2
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail=0

fresh=$("$train" -c "$ini" --checkpoint "$tmp/ck" --steps 20 --save-at 8) || { echo "fresh run failed"; exit 1; }
echo "$fresh"
resumed=$("$train" -c "$ini" --checkpoint "$tmp/ck" --steps 20 --resume) || { echo "resume failed"; exit 1; }
echo "$resumed"
other=$("$train" -c "$ini" --checkpoint "$tmp/ck2" --steps 20 --save-at 8 --seed 99) || { echo "other seed failed"; exit 1; }

f=$(grep '^final ' <<<"$fresh"); r=$(grep '^final ' <<<"$resumed"); o=$(grep '^final ' <<<"$other")
grep -q '^resumed at step 8 ' <<<"$resumed" || { echo "FAILED: resume did not start at step 8"; fail=1; }
[ -n "$f" ] && [ "$f" = "$r" ] || { echo "FAILED: resumed '$r' != fresh '$f'"; fail=1; }
[ "$f" != "$o" ] || { echo "FAILED: another seed gave the same model"; fail=1; }
[ $fail = 0 ] && echo "ok: resumed model equals the uninterrupted one: $f"
exit $fail
