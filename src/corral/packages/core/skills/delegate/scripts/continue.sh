#!/usr/bin/env bash
# Give an ended delegate run a further instruction: continue.sh RUN_ID "instruction"
set -eu
[ $# -eq 2 ] || { echo 'usage: continue.sh RUN_ID "instruction"' >&2; exit 64; }
. "$(dirname "$0")/api.sh"
answer=$(api POST "/delegates/$1/continue" "$(json_arg message "$2")")
printf '%s\n' "$answer" | python3 -c '
import json, sys
run = json.load(sys.stdin)
print("Continued as run %s (%s); its answer reports into the conversation." % (run.get("id"), run.get("status")))'
