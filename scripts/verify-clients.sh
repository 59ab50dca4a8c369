#!/usr/bin/env bash
# Python clients generated from openapi.yaml drive a live packd (`make verify-clients`):
# openapi-python-client (with scripts/openapi-python-client.yaml) and datamodel-codegen (pydantic v2)
# generate into a temporary folder, `packd serve` and the fixture upstream start on free loopback
# ports, and scripts/verify_clients.py creates, follows, reads, lists, exports, imports and
# deletes packs with them, asserting each answer. The tools come from `make verify`'s virtual
# environment (.build/venv); a missing one fails. Usage: make verify-clients
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/live-packd.sh

for tool in openapi-python-client datamodel-codegen; do
  command -v "$tool" >/dev/null || live_fail "$tool is missing: run this through make verify-clients (.build/venv)"
done
live_packd_start

echo "== generating clients from openapi.yaml"
openapi-python-client generate --path openapi.yaml --output-path "$LIVE_WORK/client" \
  --config scripts/openapi-python-client.yaml >"$LIVE_WORK/openapi-python-client.log" 2>&1 \
  || { cat "$LIVE_WORK/openapi-python-client.log" >&2; live_fail "openapi-python-client could not generate a client"; }
if grep -q "^WARNING" "$LIVE_WORK/openapi-python-client.log"; then
  cat "$LIVE_WORK/openapi-python-client.log" >&2
  live_fail "openapi-python-client left parts of openapi.yaml out (warnings above)"
fi
datamodel-codegen --input openapi.yaml --input-file-type openapi --output "$LIVE_WORK/models.py" \
  --output-model-type pydantic_v2.BaseModel --formatters builtin 2>"$LIVE_WORK/datamodel-codegen.log" \
  || { cat "$LIVE_WORK/datamodel-codegen.log" >&2; live_fail "datamodel-codegen could not generate models"; }
echo "packd_client: $(find "$LIVE_WORK/client/packd_client" -name '*.py' | wc -l) files; models.py: $(grep -c '^class ' "$LIVE_WORK/models.py") classes"

echo "== the generated clients against packd at $PACKD_URL"
PYTHONPATH="$LIVE_WORK/client:$LIVE_WORK:scripts" python3 scripts/verify_clients.py \
  "$PACKD_URL" "$PACKD_KEY_FILE" "$UPSTREAM" "$STYLE_URL" openapi.yaml
