#!/usr/bin/env bash
# A CI step that gates on a performance experiment: `orch submit SPEC --fail-on …` (on the
# embedded default — a private Redis and a local worker — unless REDIS_URL names a cluster), then
# the JUnit file of its outcome for the CI's test report, and on GitHub Actions the annotations
# and the step summary. The step's exit code is submit's: 0 when no outcome in --fail-on came
# up (`orch --help`, "Exit codes").
#
#   examples/ci/gate.sh SPEC
#
# Environment:
#   FAIL_ON   outcomes that fail the step, comma-separated (slower, invalid, inconclusive,
#             equivalent, fail, or none); unset: orch's default (slower, invalid, fail, not_testable)
#   RESULTS   where results/<id>/ is written (default: results)
#   JUNIT     the JUnit file to write (default: $RESULTS/orch-junit.xml)
#   ORCH      how to run orch (default: npx orch)
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 SPEC (FAIL_ON, RESULTS, JUNIT, ORCH from the environment)" >&2
  exit 2
fi
spec=$1
results=${RESULTS:-results}
junit=${JUNIT:-$results/orch-junit.xml}
read -r -a orch <<< "${ORCH:-npx orch}"
fail_on=()
if [ -n "${FAIL_ON:-}" ]; then fail_on=(--fail-on "$FAIL_ON"); fi

mkdir -p "$results" "$(dirname "$junit")"
# --json: one line naming the results directory (or the error, when nothing ran)
line=$("${orch[@]}" submit "$spec" --results "$results" "${fail_on[@]}" --json)
code=$?
dir=$(printf '%s' "$line" | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { const o = JSON.parse(s); if (o.dir) console.log(o.dir); } catch {} })')
if [ -z "$dir" ]; then
  echo "gate: orch submit $spec exited $code without results: $line" >&2
  exit "$code"
fi

"${orch[@]}" report --from "$dir" --format junit "${fail_on[@]}" > "$junit"
if [ -n "${GITHUB_ACTIONS:-}" ]; then
  # annotations on stdout, the summary appended to $GITHUB_STEP_SUMMARY
  "${orch[@]}" report --from "$dir" --format github "${fail_on[@]}"
fi
echo "gate: $spec exited $code; results $dir; JUnit $junit"
exit "$code"
