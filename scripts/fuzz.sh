#!/usr/bin/env bash
# Builds the libFuzzer target tests/fuzz/NAME_fuzz.cpp (with the sources listed in
# tests/fuzz/NAME.sources) into build/fuzz with clang, ASan and UBSan, and runs it from the seed
# corpus tests/fuzz/corpus/NAME/. Exits nonzero on a finding; the input is left in
# build/fuzz/NAME-artifacts/ (commit it to the seed corpus as a regression file once fixed).
#   scripts/fuzz.sh safetensors 20000   a fixed budget: 20000 inputs from a fixed seed and a
#                                        fresh scratch corpus, the same work however loaded the
#                                        machine is (what ctest runs)
#   scripts/fuzz.sh safetensors 600s    explore for ten minutes, keeping what it finds in
#                                        build/fuzz/NAME-corpus for the next run
set -euo pipefail

name=${1:?usage: scripts/fuzz.sh NAME RUNS|SECONDSs}
budget=${2:-20000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${OXMERA_FUZZ_DIR:-$root/build/fuzz}
cxx=${OXMERA_FUZZ_CXX:-clang++}
target=$root/tests/fuzz/${name}_fuzz.cpp
seeds=$root/tests/fuzz/corpus/$name
[[ -f $target ]] || { echo "fuzz.sh: no target $target" >&2; exit 2; }
[[ -d $seeds ]] || { echo "fuzz.sh: no seed corpus $seeds" >&2; exit 2; }

sources=("$target")
libraries=()  # lines of NAME.sources starting with -l: libraries to link
if [[ -f $root/tests/fuzz/$name.sources ]]; then
  while read -r line; do
    [[ -z $line || $line == \#* ]] && continue
    if [[ $line == -l* ]]; then libraries+=("$line"); continue; fi
    sources+=("$root/$line")
  done <"$root/tests/fuzz/$name.sources"
fi

mkdir -p "$build"
binary=$build/${name}_fuzz
# Each source is compiled on its own through ccache (when present; the source tree is its base
# directory, so a fresh clone hits a previous clone's objects), then linked: seconds when
# nothing changed, and only the changed files otherwise.
launcher=()
if command -v ccache >/dev/null; then launcher=(env CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 ccache); fi
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=all)
objects=()
for source in "${sources[@]}"; do
  object=$build/$name-objects/${source#"$root"/}.o
  mkdir -p "$(dirname "$object")"
  (cd "$build" && "${launcher[@]}" "$cxx" "${flags[@]}" -I"$root/include" -I"$root/src" \
     -c "$source" -o "$object")
  objects+=("$object")
done
"$cxx" "${flags[@]}" "${objects[@]}" "${libraries[@]}" -o "$binary.tmp"
mv "$binary.tmp" "$binary"

# New inputs go to a scratch corpus (the first folder); the committed seeds stay as they are.
corpus=$build/$name-corpus
artifacts=$build/$name-artifacts
if [[ $budget == *s ]]; then
  limit=(-max_total_time="${budget%s}")
else
  limit=(-runs="$budget" -seed=1)
  rm -rf "$corpus"
fi
mkdir -p "$corpus" "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# -timeout is per input and generous: a loaded machine must not turn into a finding.
"$binary" "${limit[@]}" -timeout=60 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds"
