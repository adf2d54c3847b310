#!/usr/bin/env bash
# Here, before the device call: the device kit (node, node_modules) and two clean trees into the
# ignored .carry/: orch-head.tar (git archive of HEAD: the device measures what is committed, not
# a working tree other edits are in flight in) and orch-old.tar (the whole tree of BASE, default
# HEAD~1: its worker and, where its native/ differs, its graphrt are the "before").
set -euo pipefail
base=${1:-HEAD~1}
../shared/tools/device-kit
git archive -o .carry/orch-head.tar HEAD
git archive -o .carry/orch-old.tar "$base"
rm -f .carry/native-old.tar
du -sh .carry/*
