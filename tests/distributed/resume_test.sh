#!/usr/bin/env bash
# A job killed mid-run and restarted by braid-run resumes from its last checkpoint (parameters, the
# Trainer's states, the step):
#   resume_test.sh BRAID_RUN WORKER          2 ranks, restarted with --max-restarts: the 8 losses equal
#                                            the uninterrupted run's, bit for bit
#   resume_test.sh BRAID_RUN WORKER elastic  3 ranks with --min-ranks 2: the job goes on with 2 ranks,
#                                            re-splitting each step's batch; the losses before the
#                                            failure are the uninterrupted run's bit for bit, the later
#                                            ones within float rounding (the sums are added in another order)
#   resume_test.sh BRAID_RUN WORKER rejoin   the same with --rejoin 0: the 2 ranks stop at a checkpoint
#                                            for the lost rank, and the job ends on 3 ranks again
set -euo pipefail
run="$1" worker="$2" mode="${3:-restart}"
whole="$(mktemp -d)" resumed="$(mktemp -d)"
trap 'rm -rf "$whole" "$resumed"' EXIT
if [[ "$mode" == elastic ]]; then
  ranks=3 flags=(--min-ranks 2) expect="continuing with 2 ranks" resumed_as="of 2: resumed at step 5"
elif [[ "$mode" == rejoin ]]; then
  # The 2 ranks resume at step 5 and stop after its checkpoint; 3 ranks finish from there.
  ranks=3 flags=(--min-ranks 2 --rejoin 0) expect="restarting with 3 ranks: 1 rejoin from the checkpoint"
  resumed_as="of 3: resumed at step 6"
else
  ranks=2 flags=() expect="restarting every rank" resumed_as="of 2: resumed at step 5"
fi
"$run" -n "$ranks" "$worker" resume "$whole" -1
# Rank 1 dies at the start of step 5 on the first attempt; braid-run stops the others and starts again.
log="$("$run" -n "$ranks" --max-restarts 1 "${flags[@]}" "$worker" resume "$resumed" 5 2>&1)" || {
  echo "$log"
  echo "resume_test: the restarted job failed"
  exit 1
}
echo "$log"
grep -q "$expect" <<<"$log" || { echo "resume_test: braid-run did not say '$expect'"; exit 1; }
grep -Eq "$resumed_as" <<<"$log" || { echo "resume_test: the restarted job did not resume ('$resumed_as')"; exit 1; }
for s in 0 1 2 3 4 5 6 7; do
  a="$(cat "$whole/loss.$s")" b="$(cat "$resumed/loss.$s")"
  if [[ "$mode" != restart && $s -ge 5 ]]; then
    python3 -c "import sys; a, b = float.fromhex('$a'), float.fromhex('$b'); sys.exit(abs(a - b) > 1e-5 * abs(a))" || {
      echo "resume_test: step $s's loss differs beyond rounding: $a uninterrupted, $b after losing a rank"
      exit 1
    }
  elif [[ "$a" != "$b" ]]; then
    echo "resume_test: step $s's loss differs: $a uninterrupted, $b resumed"
    exit 1
  fi
done
echo "resume_test ($mode): the resumed run's 8 losses match the uninterrupted run's ($(cat "$whole/loss.7"))"
