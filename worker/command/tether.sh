#!/bin/sh
# tether.sh CMD [ARG...] — runs CMD fate-shared with the process that started this script.
#
# Contract (worker/command/tether.ts starts it): this script leads its own process group
# (spawn with detached: true) and its stdin is a pipe the parent never writes. When that pipe
# reaches EOF — the parent exited, or was killed with -9 — the whole group (CMD and everything
# it started, a card's flock(1) included) gets SIGKILL. No prctl(PR_SET_PDEATHSIG) needed, and it
# holds across an exec chain because it is the group, not one pid, that dies.
# CMD's stdin is /dev/null; its exit status is this script's.
exec 3<&0
"$@" </dev/null 3<&- &
child=$!
# The watcher reads the tether with the `read` builtin: no extra process outlives it.
{ read -r _ <&3; kill -KILL 0; } &
watcher=$!
exec 3<&-
wait "$child"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"
