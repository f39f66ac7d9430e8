#!/usr/bin/env bash
# The CUDA checks that need a GPU, in one call of the device tool (docs/CUDA.md, "gpu-check").
#
# The GPU machine's image has no OpenBLAS, Highway or GoogleTest and cannot install them, so the
# programs are built HERE (sm_90 only) and carried there with the shared libraries they need:
#
#   bash scripts/gpu-check.sh pack     # here: build, then pack build/gpu-pack/oxmera-gpu.tar.xz
#
# then one device-tool call (the archive is ignored by git, so it travels through `carry`):
#
#   carry:     ["build/gpu-pack"]
#   command:   bash scripts/gpu-check.sh run
#   timeout_s: 480  (GPU_CHECK_BUDGET, 420 s by default, bounds the run inside it)
#
# `run` unpacks the archive into a temporary folder and runs, each step under its own time limit
# and never stopping at a failure: (1) `oxmera doctor`; (2) the CUDA-only tests (Cuda*, less
# the host-only NVRTC/ptxas compilations CI runs) and the 1-rank NCCL group (Nccl*, with the
# image's libnccl.so.2 found by name); (3) the parity suites (op/autograd, nn, linalg, optim,
# and the Hugging Face models: transformers' logits and greedy tokens) with
# OXMERA_TEST_DEVICE=cuda, as ctest runs them with `stand-in` (device_stand_in_*), sharded over
# the cores; (4) compute-sanitizer's memcheck, racecheck, synccheck and initcheck with
# OXMERA_CUDA_ALLOC=direct on a small parity subset; (5) the same subset with the kernels
# compiled by NVRTC (OXMERA_CUDA_NVRTC=1), twice: compiled, then from the disk cache;
# (6) the three recipes of `oxmera train` for 50 steps on the GPU and the CPU, whose losses must
# agree within 1e-4 relative. Steps 2 to 6 run concurrently; then (7) the op rows of the benchmark,
# `oxmera bench --device cuda` beside PyTorch's CUDA build (bench/gpu_torch.py), and its Hugging
# Face rows (prefill, decode tokens/s) beside transformers, alone on the GPU.
# The logs go to $OUT (summary.txt, failures.txt, doctor.txt, bench.txt, logs.tar.gz), and a
# table, one row per step, is printed last. The exit status is nonzero when any step failed.
#
# Without a GPU (here) `run` still works and checks the plumbing: the GPU steps fail or skip.
# Settings (environment):
#   GPU_CHECK_BUILD_DIR   pack: the build tree (default build/gpu, configured for sm_90; its C++
#                         objects are compiler-cache hits of the release build's, and
#                         build/release keeps the default targets that CI builds)
#   GPU_CHECK_ARCHIVE     run: the archive (default build/gpu-pack/oxmera-gpu.tar.xz)
#   GPU_CHECK_DEVICE      run: OXMERA_TEST_DEVICE for the parity and sanitizer steps (default
#                         cuda; `stand-in` tries the plumbing here with passing suites)
#   GPU_CHECK_FILTER      run: a gtest filter for the parity step (default: every test)
#   GPU_CHECK_SANITIZER_FILTER  run: the subset compute-sanitizer runs
#   GPU_CHECK_SHARDS      run: shards of oxmera_tests (default 6; the other programs get 2, 1, 1)
#   GPU_CHECK_PARITY_LIMIT / GPU_CHECK_SANITIZER_LIMIT  run: seconds per job (default 210 / 150)
#   GPU_CHECK_BUDGET      run: seconds for the whole run (default 420): jobs are cut to end in it
#   GPU_CHECK_SKIP        run: steps left out, e.g. "sanitizer train bench" (a rerun's time)
#   GPU_CHECK_XZ_LEVEL    pack: xz's level (default 6; lower packs faster, larger)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACK_DIR=$ROOT/build/gpu-pack
ARCHIVE=${GPU_CHECK_ARCHIVE:-$PACK_DIR/oxmera-gpu.tar.xz}
TEST_PROGRAMS=(oxmera_tests oxmera_nn_tests oxmera_linalg_tests oxmera_optim_tests
               oxmera_models_tests oxmera_device_tests oxmera_distributed_tests)
# The libraries a binary of this build needs that every Linux with a C++ runtime has; the rest
# (OpenBLAS, libgfortran, libquadmath, libgomp, Highway, zlib, ncurses) travel with it. The
# image's libstdc++ is newer than the build machine's, and compute-sanitizer, which runs under
# the same LD_LIBRARY_PATH, needs the image's own.
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s)'

die() { echo "gpu-check: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# pack (here)

pack() {
  local build=${GPU_CHECK_BUILD_DIR:-build/gpu}
  cd "$ROOT" || die "no $ROOT"
  command -v xz >/dev/null || die "xz is needed to pack"
  echo "gpu-check pack: configuring $build (Release, OXMERA_CUDA_ARCHS=90)"
  local log
  log=$(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
          -DOXMERA_CUDA_ARCHS=90 -DOXMERA_WERROR=OFF 2>&1) || { echo "$log"; die "configure failed"; }
  grep -q "oxmera: CUDA off" <<<"$log" && die "CUDA is off in this build: $(grep 'CUDA off' <<<"$log")"
  echo "gpu-check pack: building ${TEST_PROGRAMS[*]} oxmera_cli"
  nice cmake --build "$build" -j "${GPU_CHECK_JOBS:-2}" --target "${TEST_PROGRAMS[@]}" oxmera_cli \
    >"$build/gpu-pack-build.log" 2>&1 || { tail -40 "$build/gpu-pack-build.log"; die "build failed"; }

  local stage=$PACK_DIR/stage
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" || die "cannot make $stage"
  local bins=()
  for p in "${TEST_PROGRAMS[@]}"; do bins+=("$build/tests/$p"); done
  bins+=("$build/tools/oxmera/oxmera")
  for b in "${bins[@]}"; do
    [ -x "$b" ] || die "$b was not built"
    cp "$b" "$stage/bin/" || die "cannot copy $b"
  done
  # Shared libraries by the name the binaries ask for (the soname), dereferenced.
  local lib path
  while read -r lib path; do
    [[ $lib =~ $SYSTEM_LIBS ]] && continue
    [ -f "$path" ] || die "ldd found no file for $lib"
    cp -L "$path" "$stage/lib/$lib" || die "cannot copy $path"
  done < <(ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
  if ldd "${bins[@]}" | grep -q "not found"; then die "ldd: a library is missing here"; fi
  # Data for the training step: the first 3200 Fashion-MNIST training images and 1000 test
  # images (the image has no datasets), and a text for the char GPT.
  local fmnist=${GPU_CHECK_FMNIST:-/usr/share/datasets/fashion-mnist}
  mkdir -p "$stage/data/fashion-mnist" || die "cannot make $stage/data"
  python3 - "$fmnist" "$stage/data/fashion-mnist" <<'PY' || die "cannot cut $fmnist"
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for name, keep in [("train-images-idx3-ubyte", 3200), ("train-labels-idx1-ubyte", 3200),
                   ("t10k-images-idx3-ubyte", 1000), ("t10k-labels-idx1-ubyte", 1000)]:
    data = gzip.open(f"{src}/{name}.gz").read()
    ndim = data[3]
    dims = list(struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim]))
    item = 1
    for d in dims[1:]:
        item *= d
    dims[0] = keep
    head = data[:4] + struct.pack(f">{ndim}I", *dims)
    body = data[4 + 4 * ndim:4 + 4 * ndim + keep * item]
    with gzip.open(f"{dst}/{name}.gz", "wb") as f:
        f.write(head + body)
PY
  cat "$ROOT/README.md" "$ROOT"/docs/*.md >"$stage/data/text.txt"

  # The manifest: what was packed, from which commit, and the kernel fingerprint the GPU run
  # must report.
  {
    echo "packed      $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
    echo "commit      $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "build       $build (Release, OXMERA_CUDA_ARCHS=90)"
    "$stage/bin/oxmera" doctor 2>&1 | grep -E "kernel (fingerprint|targets|families)|^\s+build\s" | sed 's/^ *//'
    echo "files"
    (cd "$stage" && find bin lib data -type f -printf '%p %s\n' | sort)
  } >"$stage/MANIFEST.txt"
  cp "$stage/MANIFEST.txt" "$PACK_DIR/MANIFEST.txt"

  rm -f "$ARCHIVE"
  echo "gpu-check pack: compressing ($(du -sh "$stage" | cut -f1) unpacked)"
  (cd "$stage" && tar -cf - MANIFEST.txt bin lib data | nice xz -T2 "-${GPU_CHECK_XZ_LEVEL:-6}" >"$ARCHIVE.tmp") &&
    mv "$ARCHIVE.tmp" "$ARCHIVE" || die "cannot write $ARCHIVE"
  rm -rf "$stage"
  local bytes
  bytes=$(stat -c %s "$ARCHIVE")
  cat "$PACK_DIR/MANIFEST.txt"
  echo "gpu-check pack: $ARCHIVE: $((bytes / 1024 / 1024)) MiB ($bytes bytes; the device tool carries 64 MiB)"
  [ "$bytes" -lt $((60 * 1024 * 1024)) ] || die "the archive is too large to carry"
  echo "device tool: carry [\"build/gpu-pack\"], command: bash scripts/gpu-check.sh run, timeout_s 480"
}

# ---------------------------------------------------------------------------------------------
# run (on the GPU machine)

WORK="" LOGS="" RESULTS="" BIN=""
# The CUDA tests and a few fast parity suites: what compute-sanitizer and the NVRTC step run.
# Less two tests whose reports are their point: a refused allocation (memcheck reports the API's
# error) and the copy of a tensor a bad index left unwritten (initcheck).
SANITIZER_FILTER='CudaOnDevice*:CudaMemoryOnDevice*:Creation*:Copy.*:Cast.*:UnaryValues*:BinaryPromotion*:Reduce.*:Softmax*:Gather*:Where*-CudaMemoryOnDevice.OutOfMemoryNamesTheRequest:CudaOnDevice.ABadIndexSurfacesAtTheNextSynchronizationAndTheDeviceStaysUsable'

unpack() {
  [ -f "$ARCHIVE" ] || die "no $ARCHIVE: run 'bash scripts/gpu-check.sh pack' here and carry build/gpu-pack"
  WORK=$(mktemp -d /tmp/gpu-check.XXXXXX) || die "mktemp failed"
  if command -v xz >/dev/null; then
    tar -xJf "$ARCHIVE" -C "$WORK" || die "cannot unpack $ARCHIVE"
  else  # python's tarfile reads xz without the xz program
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$ARCHIVE" "$WORK" || die "cannot unpack $ARCHIVE"
  fi
  BIN=$WORK/bin LOGS=$WORK/logs RESULTS=$WORK/results
  mkdir -p "$LOGS" "$RESULTS" "$WORK/seen"
  export LD_LIBRARY_PATH=$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # libnvrtc (the NVRTC step) and cuBLAS by soname, where the image's toolkit has them.
  [ -d /usr/local/cuda/lib64 ] && LD_LIBRARY_PATH+=:/usr/local/cuda/lib64
  # NCCL (218 MB, too big to carry): the image's, from its toolkit or the torch wheel's
  # nvidia-nccl package, for the 1-rank NCCL group of the cuda-only step.
  if [ -z "${OXMERA_NCCL_LIBRARY:-}" ]; then
    OXMERA_NCCL_LIBRARY=$(find /usr/local/cuda/ /usr/lib /usr/local/lib /opt \
      "$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || echo /nonexistent)" \
      -name 'libnccl.so.2' 2>/dev/null | head -1)
    [ -n "$OXMERA_NCCL_LIBRARY" ] && export OXMERA_NCCL_LIBRARY
  fi
  # The model suite's fixture folders: in the copy of the tree the device tool runs in.
  export OXMERA_TEST_SOURCE_DIR=$ROOT
  # Many programs share 16 cores: one OpenMP thread each (the GPU does the work that matters).
  export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
  # CudaPtxas skips (OXMERA_TEST_PTXAS unset): ctest runs it, and this build's PTX is for
  # sm_90 only, which ptxas cannot assemble for the test's sm_75.
  unset OXMERA_TEST_PTXAS
}

# job STEP NAME LIMIT [VAR=VALUE...] -- COMMAND...: runs COMMAND under `timeout` with the
# variables, its output in $LOGS/NAME.log, and records "STEP NAME start end rc" (milliseconds) in $RESULTS.
job() {
  local step=$1 name=$2 limit=$3
  shift 3
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  local start end rc
  start=$(date +%s%3N)
  # Never past the run's deadline (GPU_CHECK_BUDGET): the report must have time to be written.
  local left=$((DEADLINE - $(date +%s)))
  if [ "$left" -lt 5 ]; then
    echo "gpu-check: not started, the run's budget of ${GPU_CHECK_BUDGET:-420}s is spent" >"$LOGS/$name.log"
    echo "$step $name $start $start 124" >"$RESULTS/$name"
    return
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  env "${vars[@]}" timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  end=$(date +%s%3N)
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "gpu-check: killed after ${limit}s" >>"$LOGS/$name.log"
  echo "$step $name $start $end $rc" >"$RESULTS/$name"
}

# Fails when doctor fails, and on a GPU run when doctor says CUDA is unavailable (the reason is
# in its output, which the report prints).
step_doctor() {
  job doctor doctor 60 -- "$BIN/oxmera" doctor
  cp "$LOGS/doctor.log" "$OUT/doctor.txt"
  if [ "${GPU_CHECK_DEVICE:-cuda}" != stand-in ] &&
     ! sed -n '/^  cuda/,/^[a-z]/p' "$LOGS/doctor.log" | grep -qE '^ +available +yes'; then
    read -r step name start end _ <"$RESULTS/doctor"
    echo "$step $name $start $end no-cuda" >"$RESULTS/doctor"
  fi
}

# The 1-rank NCCL group and the CUDA-only tests, as two jobs: one cannot hide the other. Test by
# test in the log (no --gtest_brief): a job cut at its limit shows the test it was in.
step_cuda_only() {
  job cuda-only nccl 90 -- "$BIN/oxmera_distributed_tests" "--gtest_filter=Nccl*" &
  # Less the NVRTC and ptxas compilations of every family: host work, which CI runs, and which
  # took over 150 s beside the other steps on the H200 machine's shared cores.
  job cuda-only cuda-only 150 -- "$BIN/oxmera_tests" "--gtest_filter=Cuda*-CudaNvrtc.*:CudaPtxas.*" &
}

# As ctest's device_stand_in_<program> runs (tests/CMakeLists.txt), with the device swapped.
step_parity() {
  local limit=${GPU_CHECK_PARITY_LIMIT:-210} device=${GPU_CHECK_DEVICE:-cuda}
  local filter=${GPU_CHECK_FILTER:-*}
  local program shards i
  for program in oxmera_tests oxmera_nn_tests oxmera_linalg_tests oxmera_optim_tests \
                 oxmera_models_tests; do
    case $program in
      oxmera_tests) shards=${GPU_CHECK_SHARDS:-6} ;;
      oxmera_nn_tests) shards=2 ;;
      *) shards=1 ;;
    esac
    for ((i = 0; i < shards; ++i)); do
      job parity "parity-$program-$i" "$limit" OXMERA_TEST_DEVICE="$device" \
        OXMERA_PRIMITIVES_SEEN="$WORK/seen/$program-$i.txt" \
        GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
        -- "$BIN/$program" "--gtest_filter=$filter" &
    done
  done
}

# compute-sanitizer on a few fast suites: the CUDA tests and some parity suites on the GPU, with
# every allocation its own cuMemAlloc (OXMERA_CUDA_ALLOC=direct) so that memcheck sees the
# bounds of each tensor.
step_sanitizer() {
  local limit=${GPU_CHECK_SANITIZER_LIMIT:-150} device=${GPU_CHECK_DEVICE:-cuda}
  local filter=${GPU_CHECK_SANITIZER_FILTER:-$SANITIZER_FILTER}
  local sanitizer=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer} tool
  for tool in memcheck racecheck synccheck initcheck; do
    if [ ! -x "$sanitizer" ]; then
      echo "gpu-check: no $sanitizer" >"$LOGS/sanitizer-$tool.log"
      echo "sanitizer-$tool sanitizer-$tool 0 0 127" >"$RESULTS/sanitizer-$tool"
      continue
    fi
    job "sanitizer-$tool" "sanitizer-$tool" "$limit" OXMERA_TEST_DEVICE="$device" \
      OXMERA_CUDA_ALLOC=direct -- "$sanitizer" --tool "$tool" --error-exitcode 99 \
      --print-limit 20 "$BIN/oxmera_tests" --gtest_brief=1 "--gtest_filter=$filter" &
  done
}

# The NVRTC fallback forced (OXMERA_CUDA_NVRTC=1) on the CUDA tests and the sanitizer's subset:
# every family compiled by NVRTC for this GPU, loaded, its stamp checked, its kernels run; a
# second process then reads the disk cache the first one wrote.
step_nvrtc() {
  local filter=${GPU_CHECK_SANITIZER_FILTER:-$SANITIZER_FILTER} device=${GPU_CHECK_DEVICE:-cuda}
  (
    # Compiling every family with NVRTC took over 150 s beside the other steps on the H200's
    # machine (2026-12-04).
    job nvrtc nvrtc-compile 240 OXMERA_CUDA_NVRTC=1 OXMERA_CUDA_CACHE_DIR="$WORK/kernel-cache" \
      OXMERA_TEST_DEVICE="$device" -- "$BIN/oxmera_tests" --gtest_brief=1 "--gtest_filter=$filter"
    job nvrtc nvrtc-cached 60 OXMERA_CUDA_NVRTC=1 OXMERA_CUDA_CACHE_DIR="$WORK/kernel-cache" \
      OXMERA_TEST_DEVICE="$device" -- "$BIN/oxmera_tests" --gtest_brief=1 "--gtest_filter=$filter"
    ls -l "$WORK/kernel-cache" >>"$LOGS/nvrtc-cached.log" 2>&1
  ) &
}

# The three recipes for 50 steps on the GPU and on the CPU (f32): the GPU's losses must follow
# the CPU's within 1e-4 relative (issue 16, section 7).
step_train() {
  local data=$WORK/data recipe
  for recipe in mlp cnn chargpt; do
    (
      local args=(train --recipe "$recipe" --epochs 1 --seed 7)
      if [ "$recipe" = chargpt ]; then
        args+=(--text "$data/text.txt" --batch-size 16 --limit 800)  # 50 steps
      else
        args+=(--data "$data/fashion-mnist" --batch-size 64)
      fi
      job train "train-$recipe-cpu" 200 -- "$BIN/oxmera" "${args[@]}" --device cpu \
        --save "$WORK/$recipe-cpu.safetensors" --log "$WORK/$recipe-cpu.jsonl" &
      job train "train-$recipe-cuda" 200 -- "$BIN/oxmera" "${args[@]}" --device cuda \
        --save "$WORK/$recipe-cuda.safetensors" --log "$WORK/$recipe-cuda.jsonl"
      wait
      job train "train-$recipe-losses" 30 -- python3 - "$WORK/$recipe-cpu.jsonl" \
        "$WORK/$recipe-cuda.jsonl" <<'PY'
import json, sys
def losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if r.get("type") == "step"][:50]
cpu, gpu = losses(sys.argv[1]), losses(sys.argv[2])
worst = max((abs(g - c) / max(abs(c), 1e-12) for c, g in zip(cpu, gpu)), default=float("inf"))
print(f"{len(cpu)} CPU and {len(gpu)} GPU losses; worst relative difference {worst:.3g}")
sys.exit(0 if len(cpu) >= 20 and len(gpu) == len(cpu) and worst <= 1e-4 else 1)
PY
    ) &
  done
}

# The op rows of the benchmark on the GPU, oxmera beside PyTorch's CUDA build (the image's
# python3), then the Hugging Face model rows beside transformers (the image's), alone on the GPU
# after the other steps; two pairs of jobs, so that one cut at its limit leaves the other's rows.
# Ratio > 1: oxmera better.
step_bench() {
  local rows=(sgemm256 sgemm1024 sgemm2048 bmm add16M add16M_bcast sum16M sum_rows softmax
              small_add transpose_copy backward_overhead cholesky_batched solve eigh)
  local hf_rows=(gpt2_prefill512 gpt2_decode_b1 gpt2_decode_b8 gpt2_decode_b1_bf16
                 llama_prefill512_bf16 llama_decode_b1 llama_decode_b1_bf16)
  job bench bench-oxmera 75 -- "$BIN/oxmera" bench --device cuda "${rows[@]}"
  job bench bench-torch 60 -- python3 "$ROOT/bench/gpu_torch.py" "${rows[@]}"
  job bench bench-hf-oxmera 60 -- "$BIN/oxmera" bench --device cuda "${hf_rows[@]}"
  job bench bench-hf-torch 90 -- python3 "$ROOT/bench/gpu_torch.py" "${hf_rows[@]}"
  python3 - "$LOGS/bench-oxmera.log" "$LOGS/bench-torch.log" "$LOGS/bench-hf-oxmera.log" \
    "$LOGS/bench-hf-torch.log" >"$WORK/bench-table" <<'PY'
import sys
ox, torch = {}, {}
for path in sys.argv[1::2]:
    for line in open(path):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3:
            ox[parts[0]] = (parts[1], parts[2])
for path in sys.argv[2::2]:
    for line in open(path):
        parts = line.split()
        if len(parts) == 3:
            torch[parts[0]] = (parts[1], parts[2])
print(f"{'row':<18} {'oxmera':>12} {'torch':>12} {'unit':<8} {'ratio':>7}")
for row, (value, unit) in ox.items():
    if row == "workload":
        continue
    t = torch.get(row, ("n/a", unit))[0]
    try:
        a, b = float(value), float(t)
        ratio = a / b if unit.startswith(("GFLOP", "GB", "tokens")) else b / a
        ratio = f"{ratio:.2f}"
    except ValueError:
        ratio = "n/a"
    print(f"{row:<18} {value:>12} {t:>12} {unit:<8} {ratio:>7}")
PY
  cp "$WORK/bench-table" "$OUT/bench.txt"
}

# The parity coverage check reads the primitives each parity run recorded (tests/test_device.cpp
# wraps the CUDA backend to record them when OXMERA_PRIMITIVES_SEEN is set): it fails when a
# Backend primitive was never called on the GPU.
step_coverage() {
  if compgen -G "$WORK/seen/*.txt" >/dev/null; then
    job parity-coverage parity-coverage 60 OXMERA_PRIMITIVES_SEEN_DIR="$WORK/seen" \
      -- "$BIN/oxmera_device_tests" --gtest_filter='ParityCoverage.*'
  else
    echo "gpu-check: no parity run recorded its primitives (did the parity runs start?)" \
      >"$LOGS/parity-coverage.log"
    echo "parity-coverage parity-coverage 0 0 1" >"$RESULTS/parity-coverage"
  fi
}

# gtest's counts in one log: "passed failed skipped". Under --gtest_brief=1 gtest prints no
# list of failures at the end, so the failed tests are counted by their timed result lines.
gtest_counts() {
  local log=$1 passed skipped failed
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ tests?[,.]' "$log" | grep -oE '[0-9]+' | tail -1)
  failed=$(grep -E '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log" | sort -u | wc -l)
  echo "${passed:-0} ${failed:-0} ${skipped:-0}"
}

# One row per step: its jobs' counts summed, its wall time from the first start to the last end.
# A job failed when its program exited nonzero, even with every test passed (a crash after the
# summary, a sanitizer's report, a time limit).
report() {
  local steps=(doctor cuda-only parity parity-coverage sanitizer-memcheck sanitizer-racecheck
               sanitizer-synccheck sanitizer-initcheck nvrtc train bench)
  local failed_any=0 step
  : >"$OUT/failures.txt"
  printf '%-20s %7s %7s %7s %7s  %s\n' step passed failed skipped seconds result >"$WORK/table"
  for step in "${steps[@]}"; do
    local p=0 f=0 s=0 first="" last="" bad=() skip=0 name start end rc jp jf js
    while read -r _ name start end rc; do
      if [ "$rc" = skip ]; then skip=1; continue; fi
      read -r jp jf js < <(gtest_counts "$LOGS/$name.log")
      p=$((p + jp)) f=$((f + jf)) s=$((s + js))
      [ -z "$first" ] || [ "$start" -lt "$first" ] && first=$start
      [ -z "$last" ] || [ "$end" -gt "$last" ] && last=$end
      if [ "$rc" != 0 ]; then
        bad+=("$name:rc=$rc")
        {
          echo "== $name (exit $rc)"
          grep -E '^\[  FAILED  \] [A-Za-z_]' "$LOGS/$name.log" | sort -u | head -50
          grep -E '^========= (ERROR|Program hit|Invalid|Race|Uninitialized)|killed after' \
            "$LOGS/$name.log" | sort | uniq -c | sort -rn | head -10
          if [ "$name" = doctor ]; then
            grep -E '^ +(available|driver) ' "$LOGS/$name.log"
          elif [ "$jp$jf" = 00 ]; then
            tail -5 "$LOGS/$name.log"
          fi
        } >>"$OUT/failures.txt"
      fi
    done < <(cat "$RESULTS"/* 2>/dev/null | awk -v s="$step" '$1 == s')
    local seconds=0 result
    [ -n "$first" ] && seconds=$(((last - first + 500) / 1000))
    if [ "$skip" = 1 ]; then
      result="skipped"
    elif [ -z "$first" ]; then
      result="FAIL (did not run)" failed_any=1
    elif [ ${#bad[@]} -gt 0 ]; then
      result="FAIL (${bad[*]:0:3}$([ ${#bad[@]} -gt 3 ] && echo " ..."))" failed_any=1
    else
      result="ok"
    fi
    printf '%-20s %7s %7s %7s %7s  %s\n' "$step" "$p" "$f" "$s" "$seconds" "$result" >>"$WORK/table"
  done
  (cd "$WORK" && tar -czf "$OUT/logs.tar.gz" logs)
  {
    cat "$WORK/MANIFEST.txt" 2>/dev/null | sed -n '1,/^files/p' | grep -v '^files'
    echo
    cat "$WORK/table"
  } >"$OUT/summary.txt"
  if [ -s "$OUT/failures.txt" ]; then
    echo "--- failures (first lines; all in failures.txt and logs.tar.gz)"
    head -60 "$OUT/failures.txt"
  fi
  [ -s "$LOGS/nvidia-smi.log" ] && echo "--- nvidia-smi: $(cat "$LOGS/nvidia-smi.log")"
  echo "--- doctor (cuda)"
  sed -n '/^  cuda/,/^[a-z]/p' "$LOGS/doctor.log" | head -20
  [ -s "$WORK/bench-table" ] && { echo "--- bench (ratio > 1: oxmera better)"; cat "$WORK/bench-table"; }
  grep -h "losses; worst" "$LOGS"/train-*-losses.log 2>/dev/null | sed 's/^/--- train: /'
  echo "--- gpu-check: $(date -u +%H:%M:%S), $(($(date +%s) - RUN_START)) s in all"
  cat "$WORK/table"
  return $failed_any
}

# Whether GPU_CHECK_SKIP names the step; if so its rows in the report say "skipped" (the
# coverage check's too with parity: it reads what the parity runs recorded).
skipped() {
  [[ " ${GPU_CHECK_SKIP:-} " == *" $1 "* ]] || return 1
  local rows=$1 row
  case $1 in
    sanitizer) rows="sanitizer-memcheck sanitizer-racecheck sanitizer-synccheck sanitizer-initcheck" ;;
    parity) rows="parity parity-coverage" ;;
  esac
  for row in $rows; do echo "$row $row 0 0 skip" >"$RESULTS/$row"; done
}

run() {
  RUN_START=$(date +%s)
  # Every job ends by this time, leaving ~25 s for the report (the device call's timeout_s should
  # be GPU_CHECK_BUDGET + 60 or more: unpacking and the report come on top).
  DEADLINE=$((RUN_START + ${GPU_CHECK_BUDGET:-420} - 25))
  cd "$ROOT" || die "no $ROOT"
  OUT=${OUT:-$ROOT/build/gpu-check-out}
  mkdir -p "$OUT" || die "cannot make $OUT"
  unpack
  cp "$WORK/MANIFEST.txt" "$OUT/manifest.txt"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader >"$LOGS/nvidia-smi.log" 2>&1
  step_doctor
  local step
  for step in cuda-only parity sanitizer nvrtc train; do
    skipped "$step" || "step_${step//-/_}"
  done
  wait
  [ -e "$RESULTS/parity-coverage" ] || step_coverage
  skipped bench || step_bench
  report
  local rc=$?
  rm -rf "$WORK"
  return $rc
}

case ${1:-} in
  pack) pack ;;
  run) run ;;
  *) echo "usage: bash scripts/gpu-check.sh pack|run (see the comment at the top)" >&2; exit 2 ;;
esac
