#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair that this test makes, one
# rank in each, so the ranks talk real TCP between two separate network stacks (no shared loopback).
# Runs braid-test-dist-worker's scenarios there, first started by hand in each namespace, then by
# `braid-run --hosts` through netns_ssh.sh, a stand-in for ssh that runs the remote command in the
# namespace named as the host; and checks that braid-run stops a rank on one host when a rank on the
# other fails. Exit 77 (ctest: skipped) with the reason where namespaces cannot be made (not root, no
# iproute2, a container without the capability).
#
#   tests/distributed/netns_test.sh PATH/TO/braid-test-dist-worker PATH/TO/braid-run
set -u
worker="$1"
braid_run="$2"
agent="$(cd "$(dirname "$0")" && pwd)/netns_ssh.sh"
skip() {
  echo "skipped: $*"
  exit 77
}
[[ $EUID -eq 0 ]] || skip "making network namespaces needs root"
command -v ip >/dev/null || skip "no 'ip' command (Debian's iproute2)"
a="braid-a-$$" b="braid-b-$$" va="bra$$" vb="brb$$"
logs="$(mktemp -d)"
cleanup() {
  for pid in "$logs"/ssh/sshd-*.pid; do [[ -s $pid ]] && kill "$(cat "$pid")" 2>/dev/null; done
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

# braid-run --hosts: two ranks on each host (local ranks 0 and 1 there), started through the stand-in.
hosts=(--hosts "$a:2,$b:2" --ssh "$agent" --master-addr 10.231.7.1 --master-port 29613)
for scenario in collectives trainer; do
  if BRAID_DIST_TIMEOUT=60 "$braid_run" "${hosts[@]}" "$worker" "$scenario" >"$logs/run" 2>&1 &&
    [[ $(grep -c "$scenario passed" "$logs/run") == 4 ]]; then
    echo "ok: braid-run --hosts $a:2,$b:2 $scenario"
  else
    cat "$logs/run"
    echo "FAIL: braid-run --hosts $a:2,$b:2 $scenario"
    failed=1
  fi
done
"$braid_run" "${hosts[@]}" sh -c 'echo "rank $BRAID_RANK of $BRAID_WORLD_SIZE, local $BRAID_LOCAL_RANK of $BRAID_LOCAL_WORLD_SIZE"' \
  >"$logs/run" 2>&1
for expected in "[0] rank 0 of 4, local 0 of 2" "[1] rank 1 of 4, local 1 of 2" "[2] rank 2 of 4, local 0 of 2" \
  "[3] rank 3 of 4, local 1 of 2"; do
  grep -qxF "$expected" "$logs/run" || {
    cat "$logs/run"
    echo "FAIL: braid-run --hosts: no line '$expected'"
    failed=1
  }
done
# A rank failing on host b stops the rank still running on host a (which sleeps for a minute): braid-run
# ends with the failed rank's status within a few seconds, and nothing of the job is left in either
# namespace.
start=$SECONDS
"$braid_run" --hosts "$a:1,$b:1" --ssh "$agent" --master-addr 10.231.7.1 \
  sh -c 'if [ "$BRAID_RANK" = 1 ]; then sleep 1; exit 3; fi; sleep 60' >"$logs/run" 2>&1
code=$?
took=$((SECONDS - start))
sleep 1
left="$(ip netns pids "$a"; ip netns pids "$b")"
if ((code == 3 && took < 10)) && [[ -z $left ]] && grep -q "rank 1 exited with status 3" "$logs/run"; then
  echo "ok: a rank failing on $b stopped the rank on $a (braid-run exited with 3 after ${took} s)"
else
  cat "$logs/run"
  echo "FAIL: braid-run --hosts after a failure: status $code after ${took} s; processes left: ${left:-none}"
  failed=1
fi
# braid-run --hosts through a real ssh: an sshd in each namespace (Debian's openssh-server, a key made
# here), braid-run itself inside host a, the worker's collectives on one rank per host. Skipped, saying
# so, where sshd is not installed.
sshd=/usr/sbin/sshd
if [[ -x $sshd ]] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null; then
  keys="$logs/ssh"
  mkdir -p "$keys" /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$keys/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$keys/id" &&
    cp "$keys/id.pub" "$keys/authorized_keys"
  cat >"$keys/sshd_config" <<CONFIG
Port 2222
HostKey $keys/host_key
AuthorizedKeysFile $keys/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
CONFIG
  for ns in "$a" "$b"; do
    ip netns exec "$ns" "$sshd" -f "$keys/sshd_config" -o "PidFile=$keys/sshd-$ns.pid" -E "$logs/sshd-$ns.log"
  done
  sleep 0.5
  ssh_cmd="ssh -i $keys/id -p 2222 -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
  if ip netns exec "$a" env BRAID_DIST_TIMEOUT=60 "$braid_run" --hosts 10.231.7.1:1,10.231.7.2:1 --ssh "$ssh_cmd" \
    --master-addr 10.231.7.1 --master-port 29615 "$worker" collectives >"$logs/run" 2>&1; then
    echo "ok: braid-run --hosts 10.231.7.1:1,10.231.7.2:1 over ssh (an sshd in each namespace) collectives"
  else
    cat "$logs/run" "$logs/sshd-$a.log" "$logs/sshd-$b.log"
    echo "FAIL: braid-run --hosts over a real ssh"
    failed=1
  fi
  for ns in "$a" "$b"; do
    [[ -s $keys/sshd-$ns.pid ]] && kill "$(cat "$keys/sshd-$ns.pid")" 2>/dev/null
  done
else
  echo "skipped: braid-run --hosts over a real ssh: no sshd (Debian's openssh-server)"
fi
exit "$failed"
