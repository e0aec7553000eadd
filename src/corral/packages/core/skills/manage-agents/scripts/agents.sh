#!/usr/bin/env bash
# An agent's tool access: agents.sh show|off|on|only|all AGENT [TOOL...]
set -eu
usage='usage: agents.sh show AGENT | off AGENT TOOL | on AGENT TOOL | only AGENT TOOL... | all AGENT'
[ $# -ge 2 ] || { echo "$usage" >&2; exit 64; }
verb=$1
agent=$2
shift 2
. "$(dirname "$0")/api.sh"
case $verb in
  show) answer=$(api GET "/agents/$agent/tools") ;;
  off|on)
    [ $# -eq 1 ] || { echo "$usage" >&2; exit 64; }
    enabled=false
    [ "$verb" = on ] && enabled=true
    answer=$(api PUT "/agents/$agent/tools/$1" "{\"enabled\": $enabled}") ;;
  only)
    [ $# -ge 1 ] || { echo "$usage" >&2; exit 64; }
    body=$(python3 -c 'import json, sys; print(json.dumps({"tools": sys.argv[1:]}))' "$@")
    answer=$(api PUT "/agents/$agent/allowlist" "$body") ;;
  all) answer=$(api DELETE "/agents/$agent/allowlist") ;;
  *) echo "$usage" >&2; exit 64 ;;
esac
printf '%s\n' "$answer" | python3 -c '
import json, sys
access = json.load(sys.stdin)
if access["mode"] == "all":
    off = ", ".join(access["tools_off"]) or "none"
    print("%s: all mode, switched off: %s" % (access["agent"], off))
else:
    print("%s: custom allowlist: %s" % (access["agent"], ", ".join(access["allowlist"])))
for tool in access["tools"]:
    print("  %-3s %s (%s)" % ("on" if tool["selected"] else "off", tool["name"], tool["package"]))'
