#!/usr/bin/env bash
# Print a background shell's captured output: output.sh SHELL_ID [--tail N]
set -eu
[ $# -ge 1 ] || { echo "usage: output.sh SHELL_ID [--tail N]" >&2; exit 64; }
shell=$1
tail_lines=0
if [ "${2-}" = "--tail" ]; then
  tail_lines=${3:?--tail needs a number of lines}
fi
case $tail_lines in *[!0-9]*) echo "--tail takes a number, not '$tail_lines'" >&2; exit 64;; esac
. "$(dirname "$0")/api.sh"
answer=$(api GET "/shells/$shell/output?limit=5000")
printf '%s\n' "$answer" | python3 -c '
import json, sys
found = json.load(sys.stdin)
text = "".join(row["text"] for row in found["rows"] if row.get("stream") != "meta")
lines = text.splitlines()
keep = int(sys.argv[1])
for line in lines[-keep:] if keep else lines:
    print(line)
shell = found["shell"]
print("[%s %s, exit code %s]" % (shell["id"], shell["status"], shell["exit_code"]))' "$tail_lines"
