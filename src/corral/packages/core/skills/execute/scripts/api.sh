# Sourced by this skill's scripts: call the Corral API as the run's user with its ticket.
#   api METHOD PATH [JSON_BODY]   prints the JSON answer; on an error prints the API's
#                                 detail to stderr and exits 1 (2: the API is unreachable)
#   json_arg KEY VALUE [KEY VALUE...]   a JSON object of strings, safely quoted
: "${CORRAL_API:?CORRAL_API is not set: run this script with execute while its skill is active}"
: "${CORRAL_TICKET:?CORRAL_TICKET is not set: run this script with execute inside a conversation}"

api() {
  _method=$1
  _path=$2
  _body=${3-}
  set -- -sS -X "$_method" -H "Authorization: Bearer $CORRAL_TICKET" -w '\n%{http_code}'
  if [ -n "$_body" ]; then
    set -- "$@" -H 'Content-Type: application/json' --data-binary "$_body"
  fi
  _answer=$(curl "$@" "$CORRAL_API$_path") || {
    echo "cannot reach the Corral API at $CORRAL_API (network off for commands? see the live setting shell_network)" >&2
    exit 2
  }
  _code=$(printf '%s\n' "$_answer" | tail -n 1)
  _json=$(printf '%s\n' "$_answer" | sed '$d')
  if [ "$_code" -ge 400 ]; then
    printf '%s' "$_json" | python3 -c '
import json, sys
raw = sys.stdin.read()
try:
    found = json.loads(raw)
    found = found.get("detail", found) if isinstance(found, dict) else found
except ValueError:
    found = raw
print("error: " + (found if isinstance(found, str) else json.dumps(found)))' >&2
    exit 1
  fi
  printf '%s\n' "$_json"
}

json_arg() {
  python3 -c '
import json, sys
pairs = sys.argv[1:]
print(json.dumps(dict(zip(pairs[::2], pairs[1::2]))))' "$@"
}
