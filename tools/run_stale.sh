#!/bin/bash
# Bring a committed set up to date one dataset at a time, a commit each (long runs: nothing is
# lost when a session ends; the next one runs this again and goes on where it stopped).
#
#   tools/run_stale.sh params/paper.yaml DATASET [DATASET ...]   # in this order, e.g. smallest first
#
# A dataset is run when its stored settings are not the parameter file's (`sweep --force stale`
# would run them all, in the set's order, with no commit between); its stored members are reused,
# so only what changed trains.  THREADS (default: all cores) sets the job's threads: 1 leaves a
# core free for other work.  TCC_DATA_DIR must point at the ARFF copies.
set -u
cd "$(dirname "$0")/.."
params=$1; shift
py=${PYTHON:-python}
$py -m tcclib "$params" --check || exit 2  # a bad file or data folder: its own clear error
set_name=$($py -c "import sys; from tcclib.running import params as param_files; print(param_files.load(sys.argv[1]).name)" "$params") || exit 2
mkdir -p outputs/.cache
cpu=$($py -c "from tcclib.running.notebooks import machine; print(machine())" | cut -c1-60)
for d in "$@"; do
  stale=$($py -c "
import sys; from pathlib import Path
from tcclib.running import params as param_files
from tcclib.running import sweep
ps = param_files.load(sys.argv[1]); print(sweep.settings_changed(ps, Path('outputs') / ps.name, sys.argv[2]) or '')" "$params" "$d") || exit 2
  if [ -z "$stale" ]; then echo "$d: up to date"; continue; fi
  t0=$(date +%s)
  $py -m tcclib "$params" --outputs outputs --only "$d" --force "$d" --no-aggregate \
      ${THREADS:+--threads $THREADS} > "outputs/.cache/run_stale-$d.log" 2>&1
  rc=$?; t1=$(date +%s)
  if [ $rc -ne 0 ]; then echo "$d: FAILED (rc $rc; outputs/.cache/run_stale-$d.log)"; continue; fi
  echo "$d: done in $((t1 - t0)) s ($stale)"
  git add -A "outputs/$set_name/$d" && \
    git commit -qm "$set_name: $d brought up to date ($stale; $((t1 - t0)) s, ${THREADS:-all} thread(s), $cpu); stored members reused, results.csv only gains rows"
done
