#!/usr/bin/env bash
# The full test job (what CI runs, through .ci/run):
#
#   0. the source checks: include directions in runtime/ (tools/check_layers.py) and formatting
#      (tools/check_format.sh, .clang-format)
#   1. build/ with warnings as errors; every ctest suite with BRAID_CPU_DEVICES=1 (one device with
#      every core: the kernels' threaded paths), then again with BRAID_CPU_DEVICES=2 (multi-device
#      paths) and with BRAID_ENGINE=sync (every op completes at push time). BRAID_CPU_DEVICES is always
#      set: the ops suites default to 2 devices when it is not.
#   2. build-asan/ (ASan + UBSan): the runtime and ops suites, leak checking on where it works
#   3. build-tsan/ (TSan): the runtime and ops suites, pinned to one CPU, with BRAID_CPU_DEVICES=2
#   The ASan run is repeated with BRAID_CPU_DEVICES=2 (cross-device copies and waits).
#   4. build-fuzz/ (clang, libFuzzer + ASan + UBSan): each fuzzer in tests/fuzz/ (the IDX, safetensors
#      and graph readers, the C API) for a bounded time
#      (BRAID_FUZZ_SECONDS, default 60) from its seed corpus, with a fixed seed (BRAID_FUZZ_SEED,
#      default 1) so that a run explores the same inputs first; skipped, visibly, without clang
#
# Every step runs even if an earlier one failed (one CI run shows every failure); the exit status is
# non-zero if any step failed. Sanitizer suppressions live in tests/sanitizers/, each one explained.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
supp="$root/tests/sanitizers"
sanitized_tests='^braid-test-(runtime|ops|ops-onednn-conv|ops-openblas-gemm|data|autograd|cpu|parallel|graph)$'
failed=()
start=$SECONDS

# step NAME COMMAND...: runs and times one step; a failure is recorded (and returned, so that the
# steps that need this one can be skipped) without stopping the job.
step() {
  local name="$1" t0=$SECONDS
  shift
  echo
  echo "==== $name"
  if "$@"; then
    echo "==== $name: ok ($((SECONDS - t0)) s)"
  else
    echo "==== $name: FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
    return 1
  fi
}

# run_ctest BUILD_DIR [VAR=VALUE...] [ctest args...]: ctest with that environment (test processes
# inherit it), started through ${launcher[@]} when set. A run that finds no test fails: a suite
# that silently vanished is not a pass. Suites run one at a time: each already uses every core (the
# engine's and the devices' threads), and the overlap tests need two devices' threads to be running
# at the same moment, which a second suite competing for 2 CI cores makes a matter of luck.
launcher=()
run_ctest() {
  local dir="$1" vars=()
  shift
  while (($#)) && [[ "$1" == *=* ]]; do vars+=("$1") && shift; done
  "${launcher[@]}" env "${vars[@]}" ctest --test-dir "$dir" --output-on-failure --no-tests=error "$@"
}

# Probes what the sanitizers can do on this kernel, with a tiny program, before trusting them with
# the real suites:
#  - LeakSanitizer stops the world with ptrace; where that is forbidden (some containers) it dies on
#    every exit, so leak checking is turned off there, with a note, rather than failing every test.
#  - TSan (GCC 12) maps shadow memory at fixed addresses and aborts with "unexpected memory mapping"
#    on kernels with vm.mmap_rnd_bits > 28; running the tests with ASLR off (setarch -R) avoids it.
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf 'int main(void) { return 0; }\n' >"$probe_dir/probe.c"
leaks=1
if cc -fsanitize=address "$probe_dir/probe.c" -o "$probe_dir/asan" 2>/dev/null &&
  ! ASAN_OPTIONS=detect_leaks=1 "$probe_dir/asan" >/dev/null 2>&1; then
  echo "note: LeakSanitizer does not work here (ptrace not permitted?); ASan runs without leak checking"
  leaks=0
fi
tsan_prefix=()
if cc -fsanitize=thread "$probe_dir/probe.c" -o "$probe_dir/tsan" 2>/dev/null && ! "$probe_dir/tsan" >/dev/null 2>&1; then
  if setarch "$(uname -m)" -R "$probe_dir/tsan" >/dev/null 2>&1; then
    echo "note: TSan needs ASLR off on this kernel; its tests run under setarch -R"
    tsan_prefix=(setarch "$(uname -m)" -R)
  else
    echo "note: TSan cannot run on this machine even with ASLR off"
  fi
fi

# vulkan_validation: the ops, Vulkan and graph suites and the mixed-device tests with the Khronos validation layer on
# (BRAID_VULKAN_VALIDATION=1 makes the plugin enable it and print every validation error); any such
# error fails the step, as does a failing test. Skipped by the caller when the plugin was not built.
vulkan_validation() {
  local log="$probe_dir/validation.log" rc=0
  BRAID_VULKAN_VALIDATION=1 build/bin/braid-test-ops >"$log" 2>&1 || rc=1
  BRAID_VULKAN_VALIDATION=1 build/bin/braid-test-runtime -tc='mixed devices*' >>"$log" 2>&1 || rc=1
  BRAID_VULKAN_VALIDATION=1 build/bin/braid-test-vulkan >>"$log" 2>&1 || rc=1
  BRAID_VULKAN_VALIDATION=1 build/bin/braid-test-graph >>"$log" 2>&1 || rc=1  # segments, fused chains
  tail -n 4 "$log"
  if grep -q "braid vulkan validation error" "$log"; then
    grep "braid vulkan validation error" "$log" | sort | uniq -c | head -n 20
    rc=1
  fi
  return "$rc"
}

# without_onednn: the CPU plugin built without oneDNN (OpenBLAS gemms, builtin convolutions; option
# BRAID_CPU_ONEDNN=OFF, or no libdnnl-dev) must still build and pass the op suite's matmul and
# convolution cases; that configuration once stopped compiling unnoticed. Only the plugin is built
# (build-nodnnl/); it runs beside build/'s libbraid, from a copy of build/lib where it replaces the
# oneDNN one (libbraid loads the plugins next to itself first).
without_onednn() {
  local run=build-nodnnl/run
  cmake -S . -B build-nodnnl -G Ninja -DCMAKE_BUILD_TYPE=Release -DBRAID_WERROR=ON -DBRAID_CPU_ONEDNN=OFF \
    -DBRAID_BUILD_TOOLS=OFF -DBRAID_BUILD_SAMPLES=OFF -DBRAID_BACKEND_VULKAN=OFF -DBRAID_BACKEND_CUDA=OFF >/dev/null &&
    cmake --build build-nodnnl --target braid-backend-cpu || return 1
  rm -rf "$run" && cp -r build/lib "$run" && cp build-nodnnl/lib/libbraid-backend-cpu.so "$run/" || return 1
  # The plugin that ran must be the one without oneDNN: it says so in its device's properties.
  LD_LIBRARY_PATH="$PWD/$run" BRAID_BACKENDS=cpu build/bin/braid-info | grep -q '"sgemm": "openblas"' || {
    echo "without_onednn: the plugin in $run does not report \"sgemm\": \"openblas\""
    return 1
  }
  LD_LIBRARY_PATH="$PWD/$run" BRAID_BACKENDS=cpu build/bin/braid-test-ops '--test-case=*matmul*,*conv*'
}

# ---- 1. the normal build, warnings as errors --------------------------------------------------------
step "include directions in runtime/ (tools/check_layers.py)" python3 tools/check_layers.py
step "formatting (tools/check_format.sh, .clang-format)" tools/check_format.sh
if step "build (build/, -Werror)" scripts/build.sh --werror; then
  step "ctest, BRAID_CPU_DEVICES=1" run_ctest build BRAID_CPU_DEVICES=1
  step "ctest, BRAID_CPU_DEVICES=2" run_ctest build BRAID_CPU_DEVICES=2
  step "ctest, BRAID_ENGINE=sync" run_ctest build BRAID_ENGINE=sync
  step "the CPU plugin without oneDNN (build-nodnnl/)" without_onednn
  if [[ -e build/lib/libbraid-backend-vulkan.so ]]; then
    step "Vulkan suites under VK_LAYER_KHRONOS_validation" vulkan_validation
  fi
fi

# ---- 2. ASan + UBSan ---------------------------------------------------------------------------------
# No -Werror here: GCC's sanitizer instrumentation changes inlining and emits its own false-positive
# warnings (-Wmaybe-uninitialized, -Wstringop-overflow); the warning gate is step 1.
# allocator_may_return_null=1 (both sanitizers): the out-of-memory tests ask for absurd sizes on
# purpose; a sanitizer's allocator would otherwise abort the test instead of returning NULL the way
# malloc does on a real OOM, which is the path under test.
# BRAID_BACKENDS=cpu: these runs load only the CPU plugin, with leak checking. The Vulkan plugin gets a
# run of its own below, without leak checking: Mesa's lavapipe leaks a few 128-byte blocks from inside
# its own library, which is unloaded by then, so LSan can neither attribute nor suppress them.
asan_env=(
  BRAID_BACKENDS=cpu
  ASAN_OPTIONS="detect_leaks=$leaks:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
  LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
)
if step "build (build-asan/, ASan+UBSan)" scripts/build.sh --sanitize address; then
  step "ctest ASan+UBSan, BRAID_CPU_DEVICES=1" run_ctest build-asan "${asan_env[@]}" BRAID_CPU_DEVICES=1 \
    -R "$sanitized_tests"
  step "ctest ASan+UBSan, BRAID_CPU_DEVICES=2" run_ctest build-asan "${asan_env[@]}" BRAID_CPU_DEVICES=2 \
    -R "$sanitized_tests"
  if [[ -e build-asan/lib/libbraid-backend-vulkan.so ]]; then
    step "ctest ASan+UBSan, cpu and vulkan plugins" run_ctest build-asan "${asan_env[@]/BRAID_BACKENDS=cpu/BRAID_BACKENDS=cpu,vulkan}" \
      ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1" \
      -R '^braid-test-(runtime|ops|data|autograd|graph|graph-vulkan|vulkan)$'  # + the vulkan plugin's own suite
  fi
fi

# ---- 3. TSan -----------------------------------------------------------------------------------------
# Pinned to one CPU (taskset): the CPU backend then sizes each device's oneTBB arena and OpenBLAS to one
# thread, so kernels run inline on the queue thread. Debian's libtbb and libopenblas are not built
# with TSan, which therefore cannot see how they hand work between their own threads, and reports
# every parallel_for and multi-threaded sgemm as a race (e.g. blocked_range split on one worker, read
# on the stealing one). Suppressing "race:libtbb" instead would hide every report whose stack passes
# through the arena, i.e. every kernel; pinning keeps all of braid's own threads (engine, queues,
# semaphores, callbacks, the application's threads) checked, and TSan finds races from the
# happens-before order, not from simultaneous execution, so one CPU loses no detection there.
first_cpu="$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status)"
# BRAID_BACKENDS=cpu: TSan cannot see the synchronisation inside Mesa's uninstrumented lavapipe threads.
tsan_env=(BRAID_BACKENDS=cpu TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$supp/tsan.supp")
if step "build (build-tsan/, TSan)" scripts/build.sh --sanitize thread; then
  # setarch (when needed) and taskset wrap ctest; the tests inherit the personality and the mask.
  launcher=("${tsan_prefix[@]}" taskset -c "${first_cpu:-0}")
  # Once, with two devices: pinned to one CPU, a one-device run exercises the same single-thread paths
  # and nothing more, and it cost seven minutes of CI.
  step "ctest TSan, BRAID_CPU_DEVICES=2" run_ctest build-tsan "${tsan_env[@]}" BRAID_CPU_DEVICES=2 -R "$sanitized_tests"
  launcher=()
fi

# fuzz_run NAME: one libFuzzer target for a bounded time. A crash, a hang over -timeout seconds, memory
# over -rss_limit_mb or any sanitizer report ends it with a non-zero status and the reproducer file.
fuzz_run() {
  local name="$1" corpus artifacts="$root/build-fuzz/artifacts"
  corpus="$(mktemp -d)"
  mkdir -p "$artifacts"
  cp "$root/tests/fuzz/corpus/$name/"* "$corpus/"
  (set -o pipefail
   "$root/build-fuzz/bin/braid-fuzz-$name" -seed="${BRAID_FUZZ_SEED:-1}" -max_total_time="${BRAID_FUZZ_SECONDS:-60}" -timeout=20 \
     -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$corpus" 2>&1 | tail -n 25)
  local rc=$?
  rm -rf "$corpus"
  ((rc == 0)) || echo "reproducer in $artifacts/ (replay: build-fuzz/bin/braid-fuzz-$name FILE)"
  return "$rc"
}
if command -v clang++ >/dev/null; then
  if step "build (build-fuzz/, clang libFuzzer + ASan + UBSan)" scripts/build.sh --sanitize fuzz; then
    step "fuzz the IDX reader (braid_dataset_open)" fuzz_run idx
    step "fuzz the C API (random programs of op calls)" fuzz_run api
    step "fuzz the safetensors reader (braid_load_safetensors)" fuzz_run safetensors
    step "fuzz the graph reader (braid_graph_load, then a run)" fuzz_run graph
  fi
else
  echo "==== fuzzers skipped: clang++ not found (scripts/install-deps.sh installs it)"
fi

echo
if ((${#failed[@]})); then
  echo "test.sh: ${#failed[@]} step(s) FAILED in $((SECONDS - start)) s:"
  printf '  - %s\n' "${failed[@]}"
  exit 1
fi
echo "test.sh: all steps passed in $((SECONDS - start)) s"
