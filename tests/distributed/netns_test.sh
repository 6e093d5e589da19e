#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair that this test makes, one
# rank in each, so the ranks talk real TCP between two separate network stacks (no shared loopback).
# Runs braid-test-dist-worker's scenarios there. Exit 77 (ctest: skipped) with the reason where
# namespaces cannot be made (not root, no iproute2, a container without the capability).
#
#   tests/distributed/netns_test.sh PATH/TO/braid-test-dist-worker
set -u
worker="$1"
skip() {
  echo "skipped: $*"
  exit 77
}
[[ $EUID -eq 0 ]] || skip "making network namespaces needs root"
command -v ip >/dev/null || skip "no 'ip' command (Debian's iproute2)"
a="braid-a-$$" b="braid-b-$$" va="bra$$" vb="brb$$"
logs="$(mktemp -d)"
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$logs"
}
trap cleanup EXIT
ip netns add "$a" 2>"$logs/err" && ip netns add "$b" 2>>"$logs/err" || skip "cannot make network namespaces: $(cat "$logs/err")"
ip link add "$va" type veth peer name "$vb" 2>"$logs/err" || skip "cannot make a veth pair: $(cat "$logs/err")"
# The two test hosts' addresses exist only inside these two namespaces.
ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" &&
  ip -n "$a" addr add 10.231.7.1/24 dev "$va" && ip -n "$b" addr add 10.231.7.2/24 dev "$vb" &&
  ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up || {
  echo "FAIL: could not set up the veth pair"
  exit 1
}
failed=0
for scenario in collectives train trainer; do
  common=(BRAID_WORLD_SIZE=2 BRAID_MASTER_ADDR=10.231.7.1 BRAID_MASTER_PORT=29611 BRAID_DIST_TIMEOUT=60)
  ip netns exec "$a" env "${common[@]}" BRAID_RANK=0 "$worker" "$scenario" >"$logs/0" 2>&1 &
  p0=$!
  ip netns exec "$b" env "${common[@]}" BRAID_RANK=1 "$worker" "$scenario" >"$logs/1" 2>&1 &
  p1=$!
  wait "$p0"
  r0=$?
  wait "$p1"
  r1=$?
  sed 's/^/[host a, rank 0] /' "$logs/0"
  sed 's/^/[host b, rank 1] /' "$logs/1"
  if ((r0 != 0 || r1 != 0)); then
    echo "FAIL: $scenario across two network namespaces: exit statuses $r0 and $r1"
    failed=1
  else
    echo "ok: $scenario across two network namespaces (10.231.7.1 and 10.231.7.2 over a veth pair)"
  fi
done
exit "$failed"
