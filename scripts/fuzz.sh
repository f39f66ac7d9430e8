#!/usr/bin/env bash
# Builds the libFuzzer target tests/fuzz/NAME_fuzz.cpp (with the sources listed in
# tests/fuzz/NAME.sources) into build/fuzz with clang, ASan and UBSan, and runs it for SECONDS
# on a copy of the seed corpus tests/fuzz/corpus/NAME/. Exits nonzero on a finding; the input
# is left in build/fuzz/NAME-artifacts/ (commit it to the seed corpus as a regression file
# once fixed).
#   scripts/fuzz.sh safetensors 30
set -euo pipefail

name=${1:?usage: scripts/fuzz.sh NAME SECONDS}
seconds=${2:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${OXMERA_FUZZ_DIR:-$root/build/fuzz}
cxx=${OXMERA_FUZZ_CXX:-clang++}
target=$root/tests/fuzz/${name}_fuzz.cpp
seeds=$root/tests/fuzz/corpus/$name
[[ -f $target ]] || { echo "fuzz.sh: no target $target" >&2; exit 2; }
[[ -d $seeds ]] || { echo "fuzz.sh: no seed corpus $seeds" >&2; exit 2; }

sources=("$target")
if [[ -f $root/tests/fuzz/$name.sources ]]; then
  while read -r line; do
    [[ -z $line || $line == \#* ]] && continue
    sources+=("$root/$line")
  done <"$root/tests/fuzz/$name.sources"
fi

mkdir -p "$build"
binary=$build/${name}_fuzz
# Rebuild when the binary is older than any source or any header under include/ and src/.
stale=0
if [[ ! -x $binary ]]; then
  stale=1
elif [[ -n $(find "${sources[@]}" "$root/include" "$root/src" "$root/tests/fuzz/$name.sources" \
            -newer "$binary" \( -name '*.h' -o -name '*.cpp' -o -name '*.sources' \) \
            -print -quit 2>/dev/null) ]]; then
  stale=1
fi
if ((stale)); then
  echo "fuzz.sh: building $binary"
  "$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"$root/include" -I"$root/src" "${sources[@]}" -o "$binary.tmp"
  mv "$binary.tmp" "$binary"
fi

# New inputs go to a scratch corpus (the first folder); the committed seeds stay as they are.
corpus=$build/$name-corpus
artifacts=$build/$name-artifacts
mkdir -p "$corpus" "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds"
