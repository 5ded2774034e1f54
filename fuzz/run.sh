#!/usr/bin/env bash
# Runs fuzz targets for a fixed time each, with the seed corpus, on stable Rust (see
# docs/fuzzing.md). Usage: fuzz/run.sh SECONDS TARGET...   Logs go to fuzz/logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")"
secs=$1; shift
mkdir -p logs
for t in "$@"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -s none -O "corpus/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" >"logs/$t.log" 2>&1 || echo "$t: exit $?" >>logs/summary
done
