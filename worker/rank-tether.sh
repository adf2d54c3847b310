#!/bin/sh
# rank-tether.sh PROGRAM [ARG...] — execs PROGRAM as a resident rank, its process group tethered to
# the worker (worker/rank-process.ts spawnRank starts it).
#
# Contract: this script leads its own process group (spawned detached, under setpriv's death
# signal where setpriv exists); fd 3 is a pipe the worker holds open and never writes; stdin,
# stdout and stderr are the rank protocol's. A watcher in the group reads fd 3; when it reaches
# EOF — the worker exited, was killed with -9, or closed it at the rank's end — the whole group
# (the program, every child it forked, the watcher) gets SIGKILL. The death signal reaches one
# process; the watcher reaches the group, so a child the program forked cannot outlive the worker.
# SIGTERM is ignored (worker/rank-process.ts says why); an ignored disposition survives exec.
trap '' TERM
{ read -r _ <&3; kill -KILL 0; } </dev/null >/dev/null 2>&1 &
exec 3<&-
exec "$@"
