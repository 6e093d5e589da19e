#!/bin/sh
# A stand-in for ssh in netns_test.sh: `netns_ssh.sh HOST COMMAND` runs COMMAND with sh in the network
# namespace HOST, in a session of its own (as sshd runs a remote command: braid-run's signals to its
# ssh do not reach it, so braid-run stops it the way it stops a real remote rank, by closing stdin).
exec ip netns exec "$1" setsid --wait sh -c "$2"
