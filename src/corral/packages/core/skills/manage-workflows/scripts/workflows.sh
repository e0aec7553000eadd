#!/usr/bin/env bash
# The rarer workflow operations: workflows.sh VERB ARGS... (see SKILL.md)
set -eu
usage='usage: workflows.sh templates | from-template NAME | save-template NAME ID | archive ID | restore ID | delete ID | channels ID CHANNEL... | cancel RUN_ID | hooks ID | add-hook ID [SCHEMA_JSON] | remove-hook ID HOOK_ID | revoke-key ID KEY_ID'
[ $# -ge 1 ] || { echo "$usage" >&2; exit 64; }
verb=$1
shift
need() { [ $# -ge "$1" ] || { echo "$usage" >&2; exit 64; }; }
. "$(dirname "$0")/api.sh"
case $verb in
  templates) api GET /workflow-templates ;;
  from-template) need 1 "$@"; api POST "/workflow-templates/$1/workflows" '{}' ;;
  save-template)
    need 2 "$@"
    found=$(api GET "/workflows/$2")
    setup=$(printf '%s\n' "$found" | python3 -c '
import json, sys
setup = json.load(sys.stdin)["setup"]
print(json.dumps({"setup": {k: v for k, v in setup.items() if k not in ("status", "delivery", "shared_with")}}))')
    api PUT "/workflow-templates/$1" "$setup" ;;
  archive|restore) need 1 "$@"; api POST "/workflows/$1/$verb" ;;
  delete) need 1 "$@"; api DELETE "/workflows/$1" ;;
  channels)
    need 2 "$@"
    id=$1
    shift
    body=$(python3 -c 'import json, sys; print(json.dumps({"channels": sys.argv[1:]}))' "$@")
    api PUT "/workflows/$id/delivery" "$body" ;;
  cancel) need 1 "$@"; api POST "/workflow-runs/$1/cancel" ;;
  hooks) need 1 "$@"; api GET "/workflows/$1/hooks" ;;
  add-hook)
    need 1 "$@"
    schema=${2-'{"type": "object"}'}
    api POST "/workflows/$1/hooks" "{\"body_schema\": $schema}" ;;
  remove-hook) need 2 "$@"; api DELETE "/workflows/$1/hooks/$2" ;;
  revoke-key) need 2 "$@"; api DELETE "/workflows/$1/keys/$2" ;;
  *) echo "$usage" >&2; exit 64 ;;
esac
