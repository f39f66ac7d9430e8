#!/usr/bin/env bash
# Installs the Debian packages a make target needs, and only those: a plain call (make run,
# make install) gets what builds the library and the `oxmera` command, and the data set it
# trains on; --test adds what the test suite needs, --bench LibTorch to compare against and,
# from PyPI (benchmark tooling only), the newest torch wheel with transformers and tokenizers in
# build/torch-wheel (the Hugging Face rows' reference; make bench ANCHOR=wheel also links its
# LibTorch); --format clang-format. Idempotent and quiet when everything is present.
# A package that cannot be installed is named, with apt's reason, and the exit code is 1.
set -euo pipefail

build=(
  build-essential cmake ninja-build ccache pkg-config git
  libopenblas-openmp-dev libhwy-dev nlohmann-json3-dev libcli11-dev libncurses-dev zlib1g-dev
  libpcre2-dev libutf8proc-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  # configured with the build (tests are targets of the same tree): small
  libgtest-dev libgmock-dev libvterm-dev
  dataset-fashion-mnist
)
packages=("${build[@]}")
case "${1:-}" in
  "") ;;
  --test) packages+=(clang libclang-rt-dev) ;;  # the fuzz targets (libFuzzer)
  --bench) packages+=(libtorch-dev libbenchmark-dev python3-pip); torch_wheel=1 ;;
  --format) packages+=(clang-format) ;;
  *) echo "usage: install-deps.sh [--test | --bench | --format]" >&2; exit 2 ;;
esac

# The newest torch wheel, transformers and tokenizers from PyPI, with what they depend on (the
# wheel's CUDA libraries too: its libtorch needs them loaded, though nothing CUDA runs; about
# 6 GB), into build/torch-wheel; --target leaves Debian's Python untouched. Delete the folder to
# take newer versions.
install_torch_wheel() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/build/torch-wheel"
  [ -f "$dir/torch/lib/libtorch_cpu.so" ] && [ -d "$dir/transformers" ] && return 0
  echo "install-deps: fetching the newest torch, transformers and tokenizers into $dir" \
    "(benchmark reference only)"
  /usr/bin/python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --target "$dir" torch transformers tokenizers ||
    { echo "install-deps: pip could not install torch and transformers from PyPI" >&2; exit 1; }
  [ -f "$dir/torch/lib/libtorch_cpu.so" ] ||
    { echo "install-deps: the torch wheel in $dir has no lib/libtorch_cpu.so" >&2; exit 1; }
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then
  [ -z "${torch_wheel:-}" ] || install_torch_wheel
  exit 0
fi

fail() {
  echo "install-deps: $1" >&2
  echo "install-deps: oxmera needs these Debian 12 packages: ${missing[*]}" >&2
  exit 1
}
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || fail "not root and no sudo: install them as root, then run make again"
  sudo="sudo"
fi
command -v apt-get >/dev/null || fail "no apt-get here (a Debian or Ubuntu system is expected)"

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! $sudo apt-get update -qq >"$log" 2>&1; then
  cat "$log" >&2
  fail "apt-get update failed (network or sources.list?)"
fi
if ! $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  # Name the packages apt cannot find or install, not only apt's last line.
  unavailable=()
  for p in "${missing[@]}"; do
    candidate=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then unavailable+=("$p"); fi
  done
  grep -E "^E:" "$log" >&2 || tail -n 20 "$log" >&2
  if [ ${#unavailable[@]} -gt 0 ]; then
    fail "no installable version of: ${unavailable[*]} (check /etc/apt/sources.list; Debian 12 'bookworm' main has them all)"
  fi
  fail "apt-get install failed"
fi
for p in "${missing[@]}"; do installed "$p" || fail "$p is still not installed after apt-get install"; done
[ -z "${torch_wheel:-}" ] || install_torch_wheel
