#!/usr/bin/env bash
# The full test job (what CI runs, through .ci/run); docs/TESTING.md says what each step catches and
# why it runs where it does:
#
#   0. the source checks: include directions and C API calls in runtime/ (tools/check_layers.py) and formatting
#      (tools/check_format.sh, .clang-format)
#   1. build/ with warnings as errors; every ctest entry with BRAID_CPU_DEVICES=1 (one device with
#      every core: the kernels' threaded paths), then the entries labelled cpu-devices again with
#      BRAID_CPU_DEVICES=2 (multi-device paths) and those labelled engine with BRAID_ENGINE=sync (every
#      op completes at push time); tests/CMakeLists.txt says which. The ops suites default to 2
#      devices when BRAID_CPU_DEVICES is not set. Then the Vulkan suites under the Khronos validation
#      layer.
#   2. build-asan/ (clang: ASan + UBSan, and the libFuzzer targets): the sanitized suites with one CPU
#      device and leak checking, the multi-device ones again with two, the Vulkan plugin's; then each
#      fuzzer in tests/fuzz/ (the IDX, safetensors and graph readers, the C API) for BRAID_FUZZ_SECONDS
#      (default 15) from its seed corpus with a fixed seed (BRAID_FUZZ_SEED, default 1) through
#      scripts/fuzz.sh, which also runs the long campaigns (10 minutes a target by default)
#   3. build-tsan/ (clang, TSan, -Werror, the CPU plugin without oneDNN, every file compiled alone): the
#      sanitized suites pinned to one CPU, with BRAID_CPU_DEVICES=2
#   The sanitizer trees build only what they run (the suites, the plugins, the fuzzers); build/ and
#   build-asan/ are unity builds (CMakeLists.txt, BRAID_UNITY_BUILD).
#
# Every step runs even if an earlier one failed (one CI run shows every failure); the exit status is
# non-zero if any step failed, and the summary lists every step with its time. Sanitizer
# suppressions live in tests/sanitizers/, each one explained.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
supp="$root/tests/sanitizers"
failed=()
times=()
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
    times+=("$(printf '%6d s  ok      %s' $((SECONDS - t0)) "$name")")
  else
    echo "==== $name: FAILED ($((SECONDS - t0)) s)"
    times+=("$(printf '%6d s  FAILED  %s' $((SECONDS - t0)) "$name")")
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
# The sanitizer trees are built with clang where it is installed (scripts/build.sh): probe with it.
sanitizer_cc=cc
command -v clang >/dev/null && sanitizer_cc=clang
leaks=1
if "$sanitizer_cc" -fsanitize=address "$probe_dir/probe.c" -o "$probe_dir/asan" 2>/dev/null &&
  ! ASAN_OPTIONS=detect_leaks=1 "$probe_dir/asan" >/dev/null 2>&1; then
  echo "note: LeakSanitizer does not work here (ptrace not permitted?); ASan runs without leak checking"
  leaks=0
fi
tsan_prefix=()
if "$sanitizer_cc" -fsanitize=thread "$probe_dir/probe.c" -o "$probe_dir/tsan" 2>/dev/null && ! "$probe_dir/tsan" >/dev/null 2>&1; then
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

# ---- 1. the normal build, warnings as errors --------------------------------------------------------
step "include directions and C API calls in runtime/ (tools/check_layers.py)" python3 tools/check_layers.py
step "formatting (tools/check_format.sh, .clang-format)" tools/check_format.sh
if step "build (build/, -Werror)" scripts/build.sh --werror; then
  step "ctest, BRAID_CPU_DEVICES=1" run_ctest build BRAID_CPU_DEVICES=1
  # BRAID_TEST_RERUN: suites may leave out what does not change with the device count (the Python
  # listings' scripts, which pick their devices themselves: bindings/python/tests).
  step "ctest, BRAID_CPU_DEVICES=2 (label cpu-devices)" run_ctest build BRAID_CPU_DEVICES=2 BRAID_TEST_RERUN=cpu-devices \
    -L '^cpu-devices$'
  step "ctest, BRAID_ENGINE=sync (label engine)" run_ctest build BRAID_ENGINE=sync -L '^engine$'
  if [[ -e build/lib/libbraid-backend-vulkan.so ]]; then
    step "Vulkan suites under VK_LAYER_KHRONOS_validation" vulkan_validation
  fi
fi

# ---- 2. ASan + UBSan ---------------------------------------------------------------------------------
# No -Werror here: sanitizer instrumentation changes inlining and, with GCC, emits its own
# false-positive warnings (-Wmaybe-uninitialized, -Wstringop-overflow); the warning gate is step 1.
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
# asan_vulkan: the suites that drive the Vulkan plugin, with it loaded beside the CPU plugin and one CPU
# device (the multi-CPU paths had their runs above), without leak checking (lavapipe leaks from inside
# itself, see above): the ops, data, autograd and graph suites on cpu:0 and vulkan:0, the plugin's own
# suite, and the runtime suite's cases that involve Vulkan (its other cases ran above).
asan_vulkan() {
  local env=("${asan_env[@]/BRAID_BACKENDS=cpu/BRAID_BACKENDS=cpu,vulkan}" BRAID_CPU_DEVICES=1
             ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1")
  local rc=0
  run_ctest build-asan "${env[@]}" -R '^braid-test-(ops|data|autograd|graph|graph-vulkan|vulkan)$' || rc=1
  env "${env[@]}" build-asan/bin/braid-test-runtime \
    '--test-case=mixed devices*,vulkan plugin*,errors: on every device*' || rc=1
  return "$rc"
}
fuzzers=()
[[ "$sanitizer_cc" == clang ]] && fuzzers=(idx api safetensors graph)
# The sanitizer trees build the target braid-sanitized: the suites labelled sanitized, the plugins they
# load and the fuzzers (tests/CMakeLists.txt), nothing else.
if step "build (build-asan/, ASan+UBSan${fuzzers:+ and libFuzzer})" scripts/build.sh --sanitize address --target braid-sanitized; then
  step "ctest ASan+UBSan, BRAID_CPU_DEVICES=1" run_ctest build-asan "${asan_env[@]}" BRAID_CPU_DEVICES=1 -L '^sanitized$'
  step "ctest ASan+UBSan, BRAID_CPU_DEVICES=2" run_ctest build-asan "${asan_env[@]}" BRAID_CPU_DEVICES=2 \
    -L '^sanitized$' -LE '^kernel-library$'
  if [[ -e build-asan/lib/libbraid-backend-vulkan.so ]]; then
    step "ASan+UBSan, cpu and vulkan plugins" asan_vulkan
  fi
  # The fuzzers (tests/fuzz/README.md): a short run each from the seed corpus; scripts/fuzz.sh alone
  # runs the long campaigns.
  for name in "${fuzzers[@]}"; do
    step "fuzz braid-fuzz-$name (${BRAID_FUZZ_SECONDS:-15} s)" \
      scripts/fuzz.sh --seconds "${BRAID_FUZZ_SECONDS:-15}" --seed "${BRAID_FUZZ_SEED:-1}" "$name"
  done
  ((${#fuzzers[@]})) || echo "==== fuzzers skipped: clang not found (scripts/install-deps.sh installs it)"
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
# No Vulkan plugin in this tree: the runs load the CPU plugin alone (above). Nor oneDNN: pinned to one
# CPU, TSan gains nothing from it (it cannot see into it), and so this tree is also the CPU plugin built
# without oneDNN, a configuration that once stopped compiling unnoticed: clang with -Werror builds it,
# and the ops suite runs its matmul and convolution cases on OpenBLAS and braid's own kernels. The other
# trees are unity builds (CMakeLists.txt, BRAID_UNITY_BUILD); this one compiles every file alone, so a
# runtime, CPU-plugin or test file that compiles only beside its batch's others is still found.
if step "build (build-tsan/, TSan, CPU plugin without oneDNN, one file at a time, -Werror)" scripts/build.sh \
  --sanitize thread --werror --target braid-sanitized -- -DBRAID_BACKEND_VULKAN=OFF -DBRAID_CPU_ONEDNN=OFF \
  -DBRAID_UNITY_BUILD=OFF; then
  # setarch (when needed) and taskset wrap ctest; the tests inherit the personality and the mask.
  launcher=("${tsan_prefix[@]}" taskset -c "${first_cpu:-0}")
  # Once, with two devices: pinned to one CPU, a one-device run exercises the same single-thread paths
  # and nothing more, and it cost seven minutes of CI. Without the kernel-library entries: they repeat
  # the ops suite's cases inside oneDNN and OpenBLAS, which TSan cannot see into.
  step "ctest TSan, BRAID_CPU_DEVICES=2" run_ctest build-tsan "${tsan_env[@]}" BRAID_CPU_DEVICES=2 \
    -L '^sanitized$' -LE '^kernel-library$'
  launcher=()
fi

echo
echo "test.sh: the steps and their times"
printf '  %s\n' "${times[@]}"
if ((${#failed[@]})); then
  echo "test.sh: ${#failed[@]} step(s) FAILED in $((SECONDS - start)) s:"
  printf '  - %s\n' "${failed[@]}"
  exit 1
fi
echo "test.sh: all steps passed in $((SECONDS - start)) s"
