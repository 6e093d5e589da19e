#!/usr/bin/env bash
# ctest entry braid-install (tests/CMakeLists.txt): installs the build into a temporary prefix and
# uses it the two ways README.md documents ("Install and use from another project"):
#
#   1. the layout: headers, libbraid.so.1 and its links, the plugins beside it, the CMake and
#      pkg-config files, the tools, the docs; no RPATH of an installed file points into the build or
#      source tree, and libbraid exports nothing but braid_* symbols;
#   2. cmake/: an outside CMake project, find_package(braid) + braid::braid, C++ over braid.hpp;
#   3. the Python package (lib/python3/dist-packages/braid): imported from the prefix, it computes with
#      the prefix's libbraid;
#   4. pkgconfig/: an outside Makefile project, `pkg-config --cflags --libs braid`, C over braid.h.
#
# Each program lists the backends, fails unless every plugin this build made was found in the
# prefix's lib folder (so from the installed libbraid, with no BRAID_BACKEND_PATH), and computes on
# cpu:0. Without pkg-config, step 4 is skipped and the test reports so (exit 77, ctest "Skipped").
#
#   check_install.sh BUILD_DIR SOURCE_DIR LIBDIR CMAKE C_COMPILER CXX_COMPILER [BACKEND...]
set -euo pipefail

build="$1" source="$2" libdir="$3" cmake="$4" cc="$5" cxx="$6"
shift 6
backends=("$@")
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/braid-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
# The plugins must come from the prefix alone, and every one of them must be listed.
unset BRAID_BACKEND_PATH BRAID_BACKENDS

fail() { echo "FAIL: $*" >&2 && exit 1; }
# quiet LOG COMMAND...: runs it with its output in LOG, shown only if it fails.
quiet() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2 && fail "$*"; }
}

echo "== install into $prefix"
quiet "$work/install.log" "$cmake" --install "$build" --prefix "$prefix"

echo "== layout"
expect=(include/braid/braid.h include/braid/braid.hpp include/braid/braid_backend.h
  "$libdir/libbraid.so" "$libdir/libbraid.so.1" "$libdir/cmake/braid/braidConfig.cmake"
  "$libdir/cmake/braid/braidConfigVersion.cmake" "$libdir/cmake/braid/braidTargets.cmake"
  "$libdir/pkgconfig/braid.pc" share/doc/braid/README.md share/doc/braid/docs/ABI.md)
for b in "${backends[@]}"; do expect+=("$libdir/libbraid-backend-$b.so"); done
for tool in braid-info braid-bench; do
  [[ -e "$build/bin/$tool" ]] && expect+=("bin/$tool")
done
for f in "${expect[@]}"; do
  [[ -e "$prefix/$f" ]] || fail "$f is not installed"
done
[[ "$(readlink "$prefix/$libdir/libbraid.so")" == libbraid.so.1 ]] || fail "libbraid.so does not link to libbraid.so.1"
readelf -d "$prefix/$libdir/libbraid.so.1" | grep -q 'Library soname: \[libbraid.so.1\]' || fail "soname is not libbraid.so.1"
# An installed file must not depend on the trees it was built from.
while IFS= read -r -d '' f; do
  if file_rpath="$(readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH')"; then
    if [[ "$file_rpath" == *"$build"* || "$file_rpath" == *"$source"* ]]; then
      fail "${f#"$prefix"/} has a build-tree RPATH: $file_rpath"
    fi
  fi
done < <(find "$prefix" -type f \( -name '*.so*' -o -perm -u+x \) -print0)
leaked="$(nm -D --defined-only "$prefix/$libdir/libbraid.so.1" | awk '$3 !~ /^braid_/ { print $3 }')"
[[ -z "$leaked" ]] || fail "libbraid exports symbols besides braid_*: $(echo "$leaked" | head -n 5 | tr '\n' ' ')"
echo "ok: ${#expect[@]} files, no build-tree RPATH, only braid_* exported"
if [[ -e "$prefix/bin/braid-info" ]]; then
  quiet "$work/braid-info.log" "$prefix/bin/braid-info"
  echo "ok: the installed braid-info runs"
fi

echo "== find_package(braid) (tests/install/cmake)"
quiet "$work/cmake-configure.log" "$cmake" -S "$here/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx"
quiet "$work/cmake-build.log" "$cmake" --build "$work/cmake-build"
"$work/cmake-build/consumer" "$prefix/$libdir" "${backends[@]}" || fail "the find_package consumer"

echo "== import braid (the Python package, $libdir/python3/dist-packages)"
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c "import numpy" 2>/dev/null; then
    python="$candidate" && break
  fi
done
if [[ -z "$python" ]]; then
  echo "no Python 3 with NumPy: the package's files are checked, not imported"
  [[ -e "$prefix/$libdir/python3/dist-packages/braid/__init__.py" ]] || fail "the Python package is not installed"
else
  # From the prefix alone: no BRAID_LIBRARY, and a working folder outside the source tree.
  (cd "$work" && env -u BRAID_LIBRARY PYTHONPATH="$prefix/$libdir/python3/dist-packages" "$python" -c "
import os, sys, braid
from braid import np
loaded = os.path.realpath(braid._lib.lib._name)
assert loaded.startswith(os.path.realpath(sys.argv[1])), 'libbraid loaded from ' + loaded
assert (np.ones((2, 2)) + 1).sum().item() == 8.0
print('ok: the installed package computes with', loaded)" "$prefix") || fail "the installed Python package"
fi

echo "== pkg-config braid (tests/install/pkgconfig)"
if ! command -v pkg-config >/dev/null; then
  echo "skipped: pkg-config not found (scripts/install-deps.sh installs it); the rest passed"
  exit 77
fi
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
echo "pkg-config --cflags --libs braid: $(pkg-config --cflags --libs braid)"
quiet "$work/make.log" make -C "$here/pkgconfig" OUT="$work" CC="$cc"
"$work/consumer-c" "$prefix/$libdir" "${backends[@]}" || fail "the pkg-config consumer"
echo "braid-install: all passed"
