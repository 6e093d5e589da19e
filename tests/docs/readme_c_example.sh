#!/usr/bin/env bash
# The README's "Using braid from C" example, extracted, compiled against this build and run: the
# README's code stays code that works and prints what its comment says.
#
#   readme_c_example.sh README C_COMPILER ABI_DIR LIB_DIR
set -euo pipefail
readme="$1" cc="$2" abi="$3" lib="$4"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# The first ```c block after the section's heading.
awk '/^## Using braid from C/ {in_section = 1}
     in_section && /^```c$/ {in_code = 1; next}
     in_code && /^```$/ {exit}
     in_code {print}' "$readme" >"$dir/app.c"
[[ -s "$dir/app.c" ]] || { echo "no C example found in $readme" >&2; exit 1; }
"$cc" -std=c11 -Wall -Wextra -Werror "$dir/app.c" -I"$abi" -L"$lib" -lbraid -Wl,-rpath,"$lib" -o "$dir/app"
out="$(BRAID_BACKENDS=cpu "$dir/app")"
echo "$out"
[[ "$out" == "y[0] = 2" ]] || { echo "expected 'y[0] = 2'" >&2; exit 1; }
