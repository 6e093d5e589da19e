#!/usr/bin/env bash
# Checks that every C, C++ and CUDA file git tracks is formatted as .clang-format says (clang-format
# from Debian 12, version 14: another version may format differently). Exits 1 naming each file that
# is not; `tools/check_format.sh --fix` formats them in place.
#
#   tools/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || { echo "check_format.sh: clang-format not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh')
if [[ "${1:-}" == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# Many files per clang-format process, one process per core: the check took 44 s file by file. With
# --dry-run --Werror, clang-format names each file that differs ("FILE:LINE:COL: error: code should be
# clang-formatted"); any other failure (a file it cannot read or parse) is printed as it came.
out="$(printf '%s\0' "${files[@]}" | xargs -0 -n 32 -P "$(nproc)" clang-format --dry-run --Werror 2>&1 >/dev/null)" &&
  status=0 || status=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if ((status != 0 && ${#bad[@]} == 0)); then
  printf '%s\n' "$out" >&2
  echo "check_format.sh: clang-format failed (status $status)" >&2
  exit 1
fi
if ((${#bad[@]})); then
  printf 'not formatted (tools/check_format.sh --fix): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files as .clang-format says"
