#!/usr/bin/env bash
# A delegate run's status, task and answer: status.sh RUN_ID
set -eu
[ $# -eq 1 ] || { echo "usage: status.sh RUN_ID" >&2; exit 64; }
. "$(dirname "$0")/api.sh"
answer=$(api GET "/delegates/$1")
printf '%s\n' "$answer" | python3 -c '
import json, sys
run = json.load(sys.stdin)
print("%s: %s" % (run.get("run_id", sys.argv[1]), run.get("status")))
print("task: %s" % run.get("task", ""))
if run.get("answer"):
    print("answer:\n%s" % run["answer"])' "$1"
