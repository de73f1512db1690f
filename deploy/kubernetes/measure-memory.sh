#!/usr/bin/env bash
# The measurement behind the Deployment's and the CronJob's memory requests and limits: the peak
# RSS (the kernel's high-water mark, getrusage ru_maxrss, as test/support/peak-rss-cli.mjs reports
# it) of the daemon (`schedule --run-now`: a first load of 1,000,000 simulator records, then SIGTERM)
# and of `run` (a first load, an unchanged re-sync, a re-sync with 10,000 changed records), each in
# a schema of its own, REPEATS times. Needs a built checkout and DATABASE_URL (a PostgreSQL whose
# role may create schemas); prints one line per sync and drops its schemas at the end.
#   DATABASE_URL=postgres://… deploy/kubernetes/measure-memory.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DATABASE_URL:?set DATABASE_URL}"
repeats=${1:-3}
records=1000000
work=$(mktemp -d)
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start_simulator() { # $1: changed records
  if [ -n "$sim_pid" ]; then kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; fi
  ./bin/wine-recon-sync simulate --port "$port" --records "$records" --change "$1" >/dev/null 2>"$work/sim.log" &
  sim_pid=$!
  for _ in $(seq 1 600); do
    if node -e "fetch('http://127.0.0.1:$port/api/login').then(() => process.exit(0), () => process.exit(1))"; then
      return
    fi
    sleep 0.5
  done
  echo "the simulator did not start" >&2
  exit 1
}

peak_mb() { # the last `peak-rss-kb N` line of a log, in MB (10^6 bytes)
  awk '/^peak-rss-kb / { kb = $2 } END { printf "%.0f", kb * 1024 / 1e6 }' "$1"
}

port=$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
export WINE_API_BASE_URL="http://127.0.0.1:$port" WINE_API_EMAIL=demo@example.com WINE_API_PASSWORD=demo-password
export LOG_LEVEL=info SYNC_CATCH_UP=false
schemas=()
measure=(node test/support/peak-rss-cli.mjs)
for i in $(seq 1 "$repeats"); do
  start_simulator 0
  schema="wrs_memory_daemon_$i"; schemas+=("$schema")
  SYNC_DB_SCHEMA=$schema SYNC_HEALTH_FILE="$work/health" "${measure[@]}" schedule --run-now 2>"$work/daemon.log" &
  daemon=$!
  until grep -q '"sync finished"' "$work/daemon.log"; do
    if ! kill -0 "$daemon" 2>/dev/null; then cat "$work/daemon.log" >&2; exit 1; fi
    sleep 1
  done
  kill -TERM "$daemon"; wait "$daemon" || true
  grep -o '"status":"[a-z]*"' "$work/daemon.log" | tail -1 | grep -q succeeded || { cat "$work/daemon.log" >&2; exit 1; }
  echo "run $i  schedule --run-now, first load       peak RSS $(peak_mb "$work/daemon.log") MB"

  schema="wrs_memory_run_$i"; schemas+=("$schema")
  for step in "first load" "unchanged re-sync" "10,000 changed"; do
    if [ "$step" = "10,000 changed" ]; then start_simulator 10000; fi
    SYNC_DB_SCHEMA=$schema "${measure[@]}" run 2>"$work/run.log" >/dev/null || { cat "$work/run.log" >&2; exit 1; }
    echo "run $i  run, $step$(printf '%*s' $((26 - ${#step})) '')peak RSS $(peak_mb "$work/run.log") MB"
  done
done
for schema in "${schemas[@]}"; do
  PGOPTIONS="-c client_min_messages=warning" psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE; DROP SCHEMA IF EXISTS ${schema}_bi CASCADE" >/dev/null
done
