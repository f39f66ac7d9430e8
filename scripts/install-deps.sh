#!/usr/bin/env bash
# Installs the Debian packages oxmera's build, tests, benchmarks and default run need.
# Idempotent and quiet when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-openmp-dev libhwy-dev nlohmann-json3-dev libcli11-dev
  libncurses-dev libvterm-dev zlib1g-dev
  clang libclang-rt-dev clang-format
  dataset-fashion-mnist
)
# --bench (make bench): LibTorch as well, to compare against; never needed to build or test.
if [ "${1:-}" = "--bench" ]; then packages+=(libtorch-dev); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
