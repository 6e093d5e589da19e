#!/usr/bin/env bash
# Configures and builds braid with CMake + Ninja (ccache on, one job per core).
#
#   scripts/build.sh [--sanitize address|thread] [--werror] [--build-dir DIR] [--target T]... [-- CMAKE_ARGS...]
#
#   (default)            build/       everything: libbraid, plugins, tools, samples, tests
#   --sanitize address   build-asan/  ASan + UBSan; runtime, plugins, tests and, with clang, the libFuzzer
#                                     targets of tests/fuzz (everything instrumented for coverage)
#   --sanitize thread    build-tsan/  TSan; runtime, plugins and tests
#                        Sanitizer trees use clang where it is installed (faster to build, and libFuzzer
#                        comes with it), else the default compiler; -O1, line tables only.
#   --werror             warnings are errors (what CI uses)
#   --target T           build only T (repeatable; default: everything the tree configures)
#   CMAKE_ARGS           passed to the configure step last, so they override the above
#                        (e.g. -- -DBRAID_BUILD_TOOLS=ON to get sanitized tools)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=""
werror=OFF
build_dir=""
extra=()
targets=()
while (($#)); do
  case "$1" in
    --sanitize)
      [[ $# -ge 2 && ("$2" == address || "$2" == thread) ]] || {
        echo "build.sh: --sanitize takes 'address' or 'thread'" >&2
        exit 2
      }
      sanitize="$2"
      shift 2
      ;;
    --werror) werror=ON && shift ;;
    --target)
      [[ $# -ge 2 ]] || { echo "build.sh: --target takes a target name" >&2; exit 2; }
      targets+=("$2")
      shift 2
      ;;
    --build-dir)
      [[ $# -ge 2 ]] || { echo "build.sh: --build-dir takes a folder" >&2; exit 2; }
      build_dir="$2"
      shift 2
      ;;
    --) shift && extra=("$@") && break ;;
    -h | --help) sed -n '2,16s/^# \{0,1\}//p' "$0" && exit 0 ;;
    *) echo "build.sh: unknown argument '$1'" >&2 && exit 2 ;;
  esac
done

args=(-G Ninja -DBRAID_WERROR="$werror" -DBRAID_SANITIZE="$sanitize")
sanitizer_compilers=()
if command -v clang >/dev/null && command -v clang++ >/dev/null; then
  sanitizer_compilers=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
fi
case "$sanitize" in
  "") default_dir=build && args+=(-DCMAKE_BUILD_TYPE=Release) ;;
  # RelWithDebInfo, which the top-level CMakeLists.txt makes -O1 with line tables in sanitizer trees:
  # reports need line numbers, and the tests must still run in CI time. Tools and samples are not run
  # under sanitizers, so they are not built there.
  address | thread)
    default_dir="build-${sanitize:0:1}san"
    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_BUILD_TOOLS=OFF -DBRAID_BUILD_SAMPLES=OFF "${sanitizer_compilers[@]}")
    ;;
esac
build_dir="${build_dir:-$root/$default_dir}"
# A tree configured with another compiler (e.g. before clang was installed) is configured afresh:
# CMake cannot switch the compiler of an existing cache.
if ((${#sanitizer_compilers[@]})) && [[ -n "$sanitize" && -f "$build_dir/CMakeCache.txt" ]] &&
  ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++$' "$build_dir/CMakeCache.txt"; then
  rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
fi

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
target_args=()
((${#targets[@]})) && target_args=(--target "${targets[@]}")
cmake --build "$build_dir" --parallel "$jobs" "${target_args[@]}"
