#!/usr/bin/env bash
# Configures and builds braid with CMake + Ninja (ccache on, one job per core).
#
#   scripts/build.sh [--sanitize address|thread] [--werror] [--build-dir DIR] [-- CMAKE_ARGS...]
#
#   (default)            build/       everything: libbraid, plugins, tools, samples, tests
#   --sanitize address   build-asan/  ASan + UBSan; runtime, plugins and tests only
#   --sanitize thread    build-tsan/  TSan; runtime, plugins and tests only
#   --sanitize fuzz      build-fuzz/  clang, libFuzzer + ASan + UBSan; runtime, CPU plugin, fuzzers
#   --werror             warnings are errors (what CI uses)
#   CMAKE_ARGS           passed to the configure step last, so they override the above
#                        (e.g. -- -DBRAID_BUILD_TOOLS=ON to get sanitized tools)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=""
werror=OFF
build_dir=""
extra=()
while (($#)); do
  case "$1" in
    --sanitize)
      [[ $# -ge 2 && ("$2" == address || "$2" == thread || "$2" == fuzz) ]] || {
        echo "build.sh: --sanitize takes 'address', 'thread' or 'fuzz'" >&2
        exit 2
      }
      sanitize="$2"
      shift 2
      ;;
    --werror) werror=ON && shift ;;
    --build-dir)
      [[ $# -ge 2 ]] || { echo "build.sh: --build-dir takes a folder" >&2; exit 2; }
      build_dir="$2"
      shift 2
      ;;
    --) shift && extra=("$@") && break ;;
    -h | --help) sed -n '2,13s/^# \{0,1\}//p' "$0" && exit 0 ;;
    *) echo "build.sh: unknown argument '$1'" >&2 && exit 2 ;;
  esac
done

args=(-G Ninja -DBRAID_WERROR="$werror" -DBRAID_SANITIZE="$sanitize")
case "$sanitize" in
  "") default_dir=build && args+=(-DCMAKE_BUILD_TYPE=Release) ;;
  # RelWithDebInfo (-O2 -g): reports need line numbers, and the tests must still run in CI time.
  # Tools and samples are not run under sanitizers, so they are not built there.
  address) default_dir=build-asan && args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_BUILD_TOOLS=OFF -DBRAID_BUILD_SAMPLES=OFF) ;;
  thread) default_dir=build-tsan && args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_BUILD_TOOLS=OFF -DBRAID_BUILD_SAMPLES=OFF) ;;
  # libFuzzer comes with clang. Only what the fuzzers drive: the runtime and the CPU plugin.
  fuzz) default_dir=build-fuzz && args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang
                                         -DCMAKE_CXX_COMPILER=clang++ -DBRAID_BUILD_TOOLS=OFF -DBRAID_BUILD_SAMPLES=OFF
                                         -DBRAID_BUILD_TESTS=OFF -DBRAID_BACKEND_VULKAN=OFF -DBRAID_BACKEND_CUDA=OFF) ;;
esac
build_dir="${build_dir:-$root/$default_dir}"

# ccache: the top-level CMakeLists uses it as the compiler launcher when it is installed. A base dir
# makes cache entries independent of where the checkout lives (CI workspaces move).
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
else
  echo "build.sh: ccache not found; building without it (scripts/install-deps.sh installs it)" >&2
fi

jobs="$(nproc)"
cmake -S "$root" -B "$build_dir" "${args[@]}" "${extra[@]}"
cmake --build "$build_dir" --parallel "$jobs"
