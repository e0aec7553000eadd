#!/usr/bin/env bash
# List the background shells you started: id, status, exit code, command.
set -eu
. "$(dirname "$0")/api.sh"
answer=$(api GET /shells)
printf '%s\n' "$answer" | python3 -c '
import json, sys
shells = json.load(sys.stdin)["shells"]
if not shells:
    print("No background shells.")
for s in shells:
    code = "-" if s["exit_code"] is None else s["exit_code"]
    print("%s  %-9s exit %-4s %s" % (s["id"], s["status"], code, s["command"][:80]))'
