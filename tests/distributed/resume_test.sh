#!/usr/bin/env bash
# A job killed mid-run and restarted by braid-run --max-restarts resumes from its last checkpoint
# (parameters, the Trainer's states, the step) and ends with the uninterrupted run's losses, bit for
# bit. Usage: resume_test.sh BRAID_RUN WORKER
set -euo pipefail
run="$1" worker="$2"
whole="$(mktemp -d)" resumed="$(mktemp -d)"
trap 'rm -rf "$whole" "$resumed"' EXIT
"$run" -n 2 "$worker" resume "$whole" -1
# Rank 1 dies at the start of step 5 on the first attempt; braid-run stops rank 0 and starts both again.
log="$("$run" -n 2 --max-restarts 1 "$worker" resume "$resumed" 5 2>&1)" || {
  echo "$log"
  echo "resume_test: the restarted job failed"
  exit 1
}
echo "$log"
grep -q "restarting every rank" <<<"$log" || { echo "resume_test: the job was not restarted"; exit 1; }
grep -q "resumed at step" <<<"$log" || { echo "resume_test: the restarted job did not resume"; exit 1; }
for s in 0 1 2 3 4 5 6 7; do
  if ! cmp -s "$whole/loss.$s" "$resumed/loss.$s"; then
    echo "resume_test: step $s's loss differs: $(cat "$whole/loss.$s" 2>&1) uninterrupted, $(cat "$resumed/loss.$s" 2>&1) resumed"
    exit 1
  fi
done
echo "resume_test: the resumed run's 8 losses equal the uninterrupted run's, bit for bit ($(cat "$whole/loss.7"))"
