#!/usr/bin/env bash
# Stop a delegate run and its children: stop.sh RUN_ID
set -eu
[ $# -eq 1 ] || { echo "usage: stop.sh RUN_ID" >&2; exit 64; }
. "$(dirname "$0")/api.sh"
answer=$(api POST "/delegates/$1/stop")
printf '%s\n' "$answer" | python3 -c '
import json, sys
run = json.load(sys.stdin)
print("%s is %s; it reports into the conversation." % (run.get("id"), run.get("status")))'
