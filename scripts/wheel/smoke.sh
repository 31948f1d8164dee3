#!/usr/bin/env bash
# smoke.sh WHEEL DIR: install WHEEL alone into a fresh venv DIR/venv (pip
# fetches NumPy, its one dependency) and run smoke_job.py there, from DIR,
# with no RNGSNAP_* variable: the package finds its rng.ini and plugins,
# draws, saves, loads, runs its command both ways, keeps the plugin trust
# rules and takes a user's plugin folder.
set -u
wheel=$(realpath "$1") || exit 1
mkdir -p "$2" && dir=$(cd "$2" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir/venv" || exit 1
python3 -m venv "$dir/venv" || exit 1
"$dir/venv/bin/python" -m pip install --disable-pip-version-check -q "$wheel" \
  > "$dir/pip.log" 2>&1 || { tail -n 20 "$dir/pip.log"; echo "smoke: pip install $wheel failed"; exit 1; }
cd "$dir" || exit 1
exec env $(env | sed -n 's/^\(RNGSNAP_[A-Za-z0-9_]*\)=.*/-u \1/p') \
  "$dir/venv/bin/python" "$here/smoke_job.py"
