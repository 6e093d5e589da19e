#!/usr/bin/env bash
# Runs braid's libFuzzer targets (tests/fuzz) from the ASan tree built with clang (build-asan/).
#
#   scripts/fuzz.sh [--seconds N] [--seed S] [--build-dir DIR] [TARGET...]
#
#   TARGET      idx, api, safetensors, graph (default: all four, one after the other)
#   --seconds   how long each target runs (default 600: a campaign; scripts/test.sh runs each for 15)
#   --seed      libFuzzer's -seed (default 1), so that a run explores the same inputs first and a
#               failure reproduces; other seeds explore elsewhere
#   --build-dir the tree with bin/braid-fuzz-* (default build-asan; scripts/build.sh --sanitize address)
#
# Each target starts from its seed corpus (tests/fuzz/corpus/TARGET, copied: the checked-in corpus is
# not grown). A crash, a hang over -timeout seconds, memory over -rss_limit_mb or any sanitizer report
# ends it with a non-zero status and leaves libFuzzer's reproducer in BUILD_DIR/artifacts/. The exit
# status is non-zero if any target failed.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=600
seed=1
build_dir="$root/build-asan"
names=()
while (($#)); do
  case "$1" in
    --seconds | --seed | --build-dir)
      [[ $# -ge 2 ]] || { echo "fuzz.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --seconds) seconds="$2" ;;
        --seed) seed="$2" ;;
        --build-dir) build_dir="$2" ;;
      esac
      shift 2
      ;;
    -h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0" && exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2 && exit 2 ;;
    *) names+=("$1") && shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: bad value '$seconds' for --seconds" >&2; exit 2; }
((${#names[@]})) || names=(idx api safetensors graph)

artifacts="$build_dir/artifacts"
mkdir -p "$artifacts"
rc=0
for name in "${names[@]}"; do
  fuzzer="$build_dir/bin/braid-fuzz-$name"
  if [[ ! -x "$fuzzer" || ! -d "$root/tests/fuzz/corpus/$name" ]]; then
    echo "fuzz.sh: no fuzzer '$name' in $build_dir/bin (scripts/build.sh --sanitize address, with clang)" >&2
    rc=1
    continue
  fi
  corpus="$(mktemp -d)"
  cp "$root/tests/fuzz/corpus/$name/"* "$corpus/"
  echo "---- braid-fuzz-$name: $seconds s, seed $seed"
  "$fuzzer" -seed="$seed" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$corpus" 2>&1 | tail -n 25
  status=$?
  rm -rf "$corpus"
  if ((status != 0)); then
    echo "reproducer in $artifacts/ (replay: $fuzzer FILE)"
    rc=1
  fi
done
exit "$rc"
