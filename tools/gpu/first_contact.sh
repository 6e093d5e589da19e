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
#   lenet      LeNet on cuda:0 one epoch, imperative then hybridized; on cuda:0 and cpu:0 together; with
#              --amp bf16
#   vulkan     the Vulkan backend on the GPU (NVIDIA's Vulkan driver, the bundled loader): braid-info,
#              braid-test-vulkan, the op suite on cpu and vulkan, the graph suite on vulkan
#   profile    a Chrome trace (BRAID_PROFILE) of 20 LeNet steps on cuda:0
#   dist       the NCCL plugin (a group of one on cuda:0; libnccl from the system or PyTorch's wheel),
#              then two processes over Gloo where one drives cuda:0 and one is CPU-only
#   cpu        the host CPU on two cores (taskset): braid-bench gemm and async, the conv layers
#              (builtin and oneDNN), LeNet's epoch; whether PyTorch is there to compare with
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
# A hung command's threads are dumped with eu-stack (bundled by bundle.sh when this machine had it)
# before it is killed: cuda-gdb's attach crashed the process on the first GPU machine braid met.
stack_dump=$(command -v eu-stack || true)
[[ -z $stack_dump && -x $stage/syslib/eu-stack ]] && stack_dump=$stage/syslib/eu-stack
# run NAME SECONDS COMMAND...: one logged step; its status and time go to the summary. Past its limit
# the command's threads are dumped into the log, then it gets SIGTERM (doctest names the test case it
# was in) and, 10 s later, SIGKILL.
run() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$out/$name.log" >/dev/null
  # A process group of its own, so that a wrapper's child (compute-sanitizer's target) is dumped and
  # stopped with it.
  setsid "$@" >>"$out/$name.log" 2>&1 &
  local pid=$! rc timed_out=0 p
  while kill -0 "$pid" 2>/dev/null && ((SECONDS - t0 < limit)); do sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    timed_out=1
    if [[ -n $stack_dump ]]; then
      for p in $(pgrep -g "$pid" 2>/dev/null || echo "$pid"); do
        echo "== $name: threads of process $p after ${limit}s (eu-stack)" >>"$out/$name.log"
        timeout 60 "$stack_dump" -p "$p" >>"$out/$name.log" 2>&1
      done
    fi
    kill -TERM -- "-$pid" 2>/dev/null
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  wait "$pid"
  rc=$?
  local verdict=ok
  ((rc != 0)) && verdict="failed (exit $rc)"
  ((timed_out)) && verdict="timed out after ${limit}s"
  printf '%-22s %-28s %4ds  %s\n' "$name" "$verdict" $((SECONDS - t0)) "$*" | tee -a "$summary"
  return $((timed_out ? 124 : rc))
}
# run_suite NAME SECONDS BINARY [ARGS...]: a doctest suite; when a test case hangs, the suite runs
# again without it (at most 4 reruns), so one hang does not hide the cases after it.
run_suite() {
  local name=$1 limit=$2
  shift 2
  local exclude="" hung try
  for try in 1 2 3 4 5; do
    local args=("$@") from
    [[ -n $exclude ]] && args+=("--test-case-exclude=$exclude")
    from=$(($(stat -c %s "$out/$name.log" 2>/dev/null || echo 0) + 1))  # this run's part of the log
    run "$name" "$limit" "${args[@]}"
    (($? == 124)) || return 0
    # doctest names the case SIGTERM interrupted; ',' separates its filters and '?' matches one character.
    hung=$(tail -c "+$from" "$out/$name.log" |
      awk '/^TEST CASE:  /{case = substr($0, 13)} /CRASHED: SIGTERM/{hung = case} END{print hung}' | tr ',' '?')
    [[ -n $hung ]] || return 0
    echo "== $name: '$hung' hung; again without it" >>"$out/$name.log"
    # The hung case alone once more, with the CUDA backend's trace (docs/CUDA.md) beside its stacks.
    BRAID_CUDA_TRACE=1 BRAID_LOG=debug run "$name-hang$try" 30 "$@" "--test-case=$hung"
    exclude=${exclude:+$exclude,}$hung
  done
}

stage_info() {
  run nvidia-smi 30 nvidia-smi
  run braid-info 60 braid-info
  run topology 120 braid-info --topology --measure
}
stage_cuda() { BRAID_BACKENDS=cpu,cuda run_suite test-cuda 60 braid-test-cuda; }
stage_ops() { CUDA_LAUNCH_BLOCKING=1 BRAID_BACKENDS=cpu,cuda run_suite test-ops 150 braid-test-ops; }
stage_suites() {
  for s in autograd graph parallel; do BRAID_BACKENDS=cpu,cuda run_suite "test-$s" 60 "braid-test-$s"; done
}
# The set-up failure case makes cudaMemPoolCreate fail on purpose (its address space is capped), and
# compute-sanitizer counts every failed API call as an error: it runs in stage cuda, not under the tools.
gpu_cases=("--test-case=cuda GPU cases*,cuda: *" "--test-case-exclude=*cannot be set up*")
stage_memcheck() {
  BRAID_BACKENDS=cuda run memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 9 braid-test-cuda \
    "${gpu_cases[@]}"
  BRAID_BACKENDS=cuda run racecheck 200 compute-sanitizer --tool racecheck --error-exitcode 9 braid-test-cuda \
    "${gpu_cases[@]}"
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
  run lenet-amp-bf16 150 braid-lenet --device cuda:0 --epochs 1 --amp bf16  # docs/AMP.md: numerics, not speed yet
}
# A Chrome trace of 20 LeNet steps on cuda:0 (tools/trace_summary.py reads it): where a step's time goes.
stage_profile() {
  BRAID_PROFILE=$out/lenet-cuda-trace.json run profile-lenet 120 braid-lenet --device cuda:0 --epochs 1 --batches 20
}

stage_vulkan() {
  # The NVIDIA driver's Vulkan ICD where the image has its manifest; where it has the driver's library
  # (libGLX_nvidia carries the ICD entry points) but no manifest, one written here.
  run vulkan-icd 60 bash -c 'ls -l /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d; \
    ldconfig -p | grep -i -E "nvidia|vulkan"; find / -xdev -name "*nvidia*icd*.json" 2>/dev/null; echo NVIDIA_DRIVER_CAPABILITIES=$NVIDIA_DRIVER_CAPABILITIES'
  local icd
  icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan -name '*nvidia*icd*.json' 2>/dev/null | head -1)
  if [[ -z $icd ]]; then
    local glx
    glx=$(ldconfig -p | awk '$1 == "libGLX_nvidia.so.0" {print $NF; exit}')
    if [[ -n $glx ]]; then
      icd=$out/nvidia_icd.json
      printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' "$glx" >"$icd"
    fi
  fi
  if [[ -z ${VK_DRIVER_FILES:-} && -z ${VK_ICD_FILENAMES:-} && -n $icd ]]; then export VK_DRIVER_FILES=$icd; fi
  VK_LOADER_DEBUG=error,warn,driver BRAID_BACKENDS=cpu,vulkan run vulkan-info 60 braid-info
  BRAID_BACKENDS=vulkan run_suite test-vulkan 60 braid-test-vulkan
  BRAID_BACKENDS=cpu,vulkan run_suite test-ops-vulkan 150 braid-test-ops
  BRAID_BACKENDS=vulkan run_suite test-graph-vulkan 120 braid-test-graph
}

# libnccl.so.2: the system's, else the one PyTorch's CUDA wheels install (nvidia-nccl-*).
stage_dist() {
  local lib
  lib=$(ldconfig -p | awk '$1 == "libnccl.so.2" {print $NF; exit}')
  [[ -z $lib ]] && lib=$(find /opt/torch /usr/local /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)
  if [[ -n $lib ]]; then export BRAID_NCCL_LIBRARY=$lib; fi
  run nccl-library 10 bash -c "echo BRAID_NCCL_LIBRARY=${lib:-none found}"
  BRAID_BACKENDS=cpu,cuda run_suite test-nccl 120 braid-test-distributed "--test-case=nccl*"
  run dist-cuda-cpu 120 braid-run -n 2 bash -c 'if [ "$BRAID_RANK" = 0 ]; then export BRAID_BACKENDS=cpu,cuda; \
    else export BRAID_BACKENDS=cpu; fi; exec braid-test-dist-worker collectives'
}

# The host CPU on two of its cores, as the 2-core machines braid is developed on: the CPU targets of
# docs/HARDWARE.md (sgemm against the FMA peak, the conv layers, the chapter's loop, LeNet's epoch).
stage_cpu() {
  local py c
  py=$(command -v python3 || echo /usr/bin/python3)
  run lscpu 10 lscpu
  run torch 30 "$py" -c 'import torch; print("torch", torch.__version__, torch.backends.mkldnn.is_available())'
  run cpu-gemm 120 taskset -c 0,1 braid-bench gemm
  BRAID_CPU_GEMM=openblas run cpu-gemm-openblas 120 taskset -c 0,1 braid-bench gemm
  # The candidate libraries as braid runs a gemm (tools/gemm_libraries.c, which bundle.sh builds).
  if [[ -x $root/.gpu-bundle/gemm_libraries ]]; then
    for c in Cooperlake SkylakeX Haswell; do
      OPENBLAS_CORETYPE=$c run "gemm-openblas-$c" 60 taskset -c 0,1 "$root/.gpu-bundle/gemm_libraries" openblas libopenblas.so.0 2 split
    done
    run gemm-dnnl 60 taskset -c 0,1 "$root/.gpu-bundle/gemm_libraries" dnnl libdnnl.so.2 2 split
    run gemm-torch 60 taskset -c 0,1 "$py" -c 'import torch, time
torch.set_num_threads(2); a = torch.rand(2000, 2000); b = torch.rand(2000, 2000); ts = []
for _ in range(17):
    t = time.perf_counter(); torch.mm(a, b); ts.append(time.perf_counter() - t)
print("torch.mm 2000^2 2 threads: best %.1f GFLOP/s" % (16e9 / min(ts[2:]) / 1e9))'
  fi
  BRAID_BENCH_PYTHON=$py run cpu-async 200 taskset -c 0,1 braid-bench async --repeat 3
  run cpu-conv 200 taskset -c 0,1 "$py" "$root/tools/conv_layers_compare.py" --braid "$build/bin/braid-lenet-layers" \
    --rounds 2 --runs 10
  # oneDNN's own convolutions (backends/cpu/README.md, "Convolutions"), which no Intel run has timed yet.
  BRAID_CPU_CONV=onednn run cpu-conv-onednn 200 taskset -c 0,1 "$py" "$root/tools/conv_layers_compare.py" \
    --braid "$build/bin/braid-lenet-layers" --rounds 2 --runs 10
  BRAID_CPU_GEMM=openblas run cpu-conv-openblas 200 taskset -c 0,1 "$py" "$root/tools/conv_layers_compare.py" \
    --braid "$build/bin/braid-lenet-layers" --rounds 2 --runs 10
  run cpu-lenet 200 taskset -c 0,1 "$py" "$root/samples/lenet/compare.py" --braid "$build/bin/braid-lenet" \
    --python "$py" --epochs 1
}

stages=("$@")
((${#stages[@]})) || stages=(info cuda ops suites memcheck bench lenet profile dist vulkan cpu)
for s in "${stages[@]}"; do
  if ! declare -F "stage_$s" >/dev/null; then
    echo "first_contact.sh: no stage '$s'" >&2
    exit 2
  fi
  "stage_$s"
done
