#!/usr/bin/env bash
# Runs braid's checks on a GPU machine, from the repository root of a copy of the working tree that
# carries .gpu-bundle/ (tools/gpu/bundle.sh): unpacks the bundle where the build was made (linking the
# checkout there when that path is free), then runs the stages named on the command line, or all, in
# this order, each under its own time limit, logging to $OUT (default ./gpu-logs):
#
#   info       nvidia-smi; braid-info; braid-info --topology --measure
#   cuda       braid-test-cuda (the plugin's own suite, GPU cases included)
#   ops        braid-test-ops on cpu and cuda with CUDA_LAUNCH_BLOCKING=1 (a fault names its op)
#   suites     braid-test-autograd, -graph, -parallel on cpu and cuda
#   memcheck   compute-sanitizer memcheck, then racecheck, on the plugin's GPU cases
#   bench      braid-bench gemm, hw and fusion on cuda:0; the chapter's MLP on cuda:0
#   lenet      LeNet on cuda:0 one epoch, imperative then hybridized; on cuda:0 and cpu:0 together
#
#   tools/gpu/first_contact.sh                 # every stage
#   tools/gpu/first_contact.sh ops memcheck    # some
#
# A stage that fails or runs out of time is logged and the next one runs; the summary is in
# $OUT/summary.txt. docs/CUDA.md says how it is used with a lent machine.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/gpu-logs}
mkdir -p "$out"
bundle=$root/.gpu-bundle/bundle.tar.xz
[[ -f $bundle ]] || { echo "first_contact.sh: no $bundle (run tools/gpu/bundle.sh where braid was built)" >&2; exit 1; }

# xz is in every Debian system; python3's lzma where it is not.
unxz_to_stdout() {
  if command -v xz >/dev/null; then
    xz -dc "$1"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  fi
}

# The build records absolute paths (RUNPATHs, source paths in tests): recreate them.
stage=$(mktemp -d)
if ! unxz_to_stdout "$bundle" | tar -xf - -C "$stage" build_dir syslib || [[ ! -s $stage/build_dir ]]; then
  echo "first_contact.sh: $bundle is damaged (no build_dir in it); make it again with tools/gpu/bundle.sh" >&2
  exit 1
fi
build=$(cat "$stage/build_dir")
src=$(dirname "$build")
if [[ ! -e $src && ! -L $src ]]; then
  mkdir -p "$(dirname "$src")" && ln -s "$root" "$src" || exit 1
elif [[ $(cd "$src" && pwd -P) != $(cd "$root" && pwd -P) ]]; then
  echo "first_contact.sh: $src exists and is not this checkout; the build's paths cannot be recreated" >&2
  exit 1
fi
unxz_to_stdout "$bundle" | tar -xf - -C / --exclude=build_dir --exclude='syslib*' || exit 1
export LD_LIBRARY_PATH=$stage/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$build/bin:/usr/local/cuda/bin:$PATH
export BRAID_BACKEND_PATH=$build/lib

summary=$out/summary.txt
: >"$summary"
# run NAME SECONDS COMMAND...: one logged step; its status and time go to the summary.
run() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$out/$name.log" >/dev/null
  timeout --kill-after=10 "$limit" "$@" >>"$out/$name.log" 2>&1
  local rc=$?
  local verdict=ok
  ((rc == 124)) && verdict="timed out after ${limit}s"
  ((rc == 137)) && verdict="killed (time limit or memory)"
  ((rc != 0 && rc != 124 && rc != 137)) && verdict="failed (exit $rc)"
  printf '%-22s %-28s %4ds  %s\n' "$name" "$verdict" $((SECONDS - t0)) "$*" | tee -a "$summary"
}

stage_info() {
  run nvidia-smi 30 nvidia-smi
  run braid-info 60 braid-info
  run topology 120 braid-info --topology --measure
}
stage_cuda() { BRAID_BACKENDS=cpu,cuda run test-cuda 180 braid-test-cuda; }
stage_ops() { CUDA_LAUNCH_BLOCKING=1 BRAID_BACKENDS=cpu,cuda run test-ops 180 braid-test-ops; }
stage_suites() {
  for s in autograd graph parallel; do BRAID_BACKENDS=cpu,cuda run "test-$s" 150 "braid-test-$s"; done
}
stage_memcheck() {
  BRAID_BACKENDS=cuda run memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 9 braid-test-cuda \
    "--test-case=cuda GPU cases*,cuda: *"
  BRAID_BACKENDS=cuda run racecheck 200 compute-sanitizer --tool racecheck --error-exitcode 9 braid-test-cuda \
    "--test-case=cuda GPU cases*,cuda: *"
}
stage_bench() {
  run bench-gemm 120 braid-bench gemm --device cuda:0
  run bench-hw 180 braid-bench hw --device cuda:0 --json
  run bench-fusion 120 braid-bench fusion --device cuda:0
  run mlp-hybrid 120 braid-mlp-hybrid --device cuda:0 --repeat 15
}
stage_lenet() {
  run lenet-imperative 150 braid-lenet --device cuda:0 --epochs 1
  run lenet-hybridized 150 braid-lenet --device cuda:0 --epochs 1 --hybridize
  run lenet-cuda-cpu 150 braid-lenet --devices cuda:0,cpu:0 --weights auto --epochs 1
}

stages=("$@")
((${#stages[@]})) || stages=(info cuda ops suites memcheck bench lenet)
for s in "${stages[@]}"; do
  if ! declare -F "stage_$s" >/dev/null; then
    echo "first_contact.sh: no stage '$s'" >&2
    exit 2
  fi
  "stage_$s"
done
