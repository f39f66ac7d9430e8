#!/usr/bin/env bash
# Lists the slowest translation units of a build from its .ninja_log, with the total compile
# time, so compile time can be watched like any other budget.
#   scripts/build-times.sh [BUILD_DIR] [COUNT]     (defaults: build/release, 25)
# Only the newest record of each output counts (ninja appends one per build). Cache hits show
# as the time ccache took to answer, so measure with a cold cache (CCACHE_DISABLE=1 or
# `ccache -C`) to see what the compiler costs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
count=${2:-25}
log=$build/.ninja_log
[[ -f $log ]] || { echo "build-times.sh: no $log (build first)" >&2; exit 2; }

awk -F '\t' -v count="$count" '
  /^#/ { next }
  { start[$4] = $1; end[$4] = $2 }
  END {
    for (out in end) {
      ms = end[out] - start[out]
      total += ms
      if (out ~ /\.o$/) { objects += ms; n++ }
      printf "%8.1f s  %s\n", ms / 1000, out | "sort -rn | head -n " count
    }
    close("sort -rn | head -n " count)
    printf "%d objects: %.0f s of compiling; all steps (links too): %.0f s\n",
           n, objects / 1000, total / 1000
  }' "$log"
