#!/usr/bin/env bash
# Queue a message into a conversation's inbox: queue.sh CONVERSATION_ID "message"
set -eu
[ $# -eq 2 ] || { echo 'usage: queue.sh CONVERSATION_ID "message"' >&2; exit 64; }
. "$(dirname "$0")/api.sh"
answer=$(api POST "/conversations/$1/inbox" "$(json_arg text "$2")")
printf '%s\n' "$answer" | python3 -c '
import json, sys
found = json.load(sys.stdin)
print("Queued for %s (delivery %s, %s)." % (sys.argv[1], found.get("id", "?"), found.get("status", "queued")))' "$1"
