#!/bin/sh
# One command-line check of a tool or sample (tests/CMakeLists.txt, the --help/--version section):
#
#   cli_expect.sh STATUS REGEX PROGRAM [ARG...]
#
# Runs PROGRAM ARG... and passes when it exits with STATUS and its output matches the extended regular
# expression REGEX. For STATUS 2, a bad command line, the match is against stderr alone, which must
# also hold the usage line, and stdout must stay empty; otherwise stdout and stderr together.
status=$1 regex=$2
shift 2
command="$*"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
got=$?
fail() {
  echo "cli_expect: $*" >&2
  echo "--- command: $command" >&2
  echo "--- stdout:" >&2; cat "$out" >&2
  echo "--- stderr:" >&2; cat "$err" >&2
  exit 1
}
[ "$got" -eq "$status" ] || fail "exit status $got, expected $status"
if [ "$status" -eq 2 ]; then
  grep -Eq -- "$regex" "$err" || fail "stderr does not match '$regex'"
  grep -q '^usage: ' "$err" || fail "no usage line on stderr"
  [ ! -s "$out" ] || fail "stdout is not empty"
else
  cat "$out" "$err" | grep -Eq -- "$regex" || fail "output does not match '$regex'"
fi
