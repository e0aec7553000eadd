#!/usr/bin/env bash
# Stop a background shell you started: stop.sh SHELL_ID
set -eu
[ $# -eq 1 ] || { echo "usage: stop.sh SHELL_ID" >&2; exit 64; }
. "$(dirname "$0")/api.sh"
answer=$(api POST "/shells/$1/stop")
printf '%s\n' "$answer" | python3 -c '
import json, sys
shell = json.load(sys.stdin)
print("%s is %s; its report follows in the conversation." % (shell["id"], shell["status"]))'
