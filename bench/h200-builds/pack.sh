#!/usr/bin/env bash
# Here, before the device call of run.sh: the device kit (node, node_modules, redis-server) and
# this repository as a git bundle into the ignored .carry/ (the device has no network: the
# worker there clones the commits it builds from the bundle's copy), with the commit measured.
set -euo pipefail
../shared/tools/device-kit
git bundle create .carry/orch.bundle HEAD
git rev-parse HEAD >.carry/orch.head
du -sh .carry/orch.bundle
