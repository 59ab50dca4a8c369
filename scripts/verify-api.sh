#!/usr/bin/env bash
# schemathesis walks openapi.yaml against a live packd (`make verify-api`): every check
# (`--checks all`: status codes, content types, headers and bodies against the document, stateful
# sequences along the document's links, negative data rejected, auth not ignored, no 5xx…) with
# a fixed seed ($SCHEMATHESIS_SEED), against `packd serve` and the fixture upstream on loopback.
#
# Generated requests carry arbitrary upstream URLs (style URLs, tile templates, ?url=), which
# packd would resolve and fetch: the run therefore happens in a network namespace of its own
# where only the loopback interface exists (unshare; as root, else in a user namespace), so no
# request leaves the machine. Options: scripts/schemathesis.toml. The tools come from `make
# verify`'s virtual environment (.build/venv). Usage: make verify-api
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${PACKD_VERIFY_API_NETNS:-}" ]; then
  command -v unshare >/dev/null || { echo "FAIL: unshare (util-linux) is missing" >&2; exit 1; }
  userns=$([ "$(id -u)" = 0 ] || echo --map-root-user)
  exec env PACKD_VERIFY_API_NETNS=1 unshare --net $userns -- "$0" "$@"
fi
ip link set lo up
if python3 - <<'PY'
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
except OSError as error:
    raise SystemExit(0 if error.errno == 101 else 1)  # ENETUNREACH: nothing but loopback
raise SystemExit(1)
PY
then echo "network namespace: loopback only"; else echo "FAIL: the namespace reaches beyond loopback" >&2; exit 1; fi

source scripts/live-packd.sh
command -v schemathesis >/dev/null || live_fail "schemathesis is missing: run this through make verify-api (.build/venv)"
live_packd_start --max-active-packs 4 --retry-attempts 2 --retry-initial-backoff 50ms --upstream-connect-timeout 2s
report="${VERIFY_API_REPORT_DIR:-.build/schemathesis}"
mkdir -p "$report"
LIVE_LOG_COPY="$report/packd.log"

echo "== a complete pack of the fixture style for the offline routes and the export"
VERIFY_API_PACK=$(curl -sf -H "Authorization: Bearer $PACKD_KEY" -H 'Content-Type: application/json' -X POST "$PACKD_URL/v1/packs" \
  -d "{\"region\": {\"style_url\": \"$STYLE_URL\", \"bounds\": [-10, 35, 20, 60], \"min_zoom\": 0, \"max_zoom\": 2}, \"name\": \"verify-api\"}" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
export VERIFY_API_PACK
for _ in $(seq 1 600); do
  state=$(curl -sf -H "Authorization: Bearer $PACKD_KEY" "$PACKD_URL/v1/packs/$VERIFY_API_PACK" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
  [ "$state" = complete ] && break
  [ "$state" = failed ] && live_fail "the fixture pack failed"
  sleep 0.1
done
[ "$state" = complete ] || live_fail "the fixture pack did not complete"
echo "pack $VERIFY_API_PACK complete"

# A webhook endpoint with a delivery (its ping; the fixture upstream answers the attempts, 404),
# first in GET /v1/webhooks (creation order): the document's links lead from that list to its
# deliveries and on to one delivery, so GET /v1/webhooks/{id}/deliveries/{delivery_id} is reached
# in the stateful phase with ids that exist, not only along created → pinged → read (generated
# webhook URLs are mostly refused, 422, and some seeds never got that far). The earlier phases do
# not delete it (schemathesis_hooks.py; the coverage phase tries DELETE on ids 1 and 2). It
# subscribes to one rare event only, so that what it holds changes when the runs ping it or retry
# a delivery, not with every pack they make.
echo "== a webhook endpoint with a delivery, first in GET /v1/webhooks"
VERIFY_API_WEBHOOK=$(curl -sf -H "Authorization: Bearer $PACKD_KEY" -H 'Content-Type: application/json' -X POST "$PACKD_URL/v1/webhooks" \
  -d "{\"url\": \"$UPSTREAM/verify-api-webhook\", \"events\": [\"pack.update_available\"], \"description\": \"verify-api\"}" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
export VERIFY_API_WEBHOOK
delivery=$(curl -sf -H "Authorization: Bearer $PACKD_KEY" -X POST "$PACKD_URL/v1/webhooks/$VERIFY_API_WEBHOOK/ping" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
curl -sf -H "Authorization: Bearer $PACKD_KEY" "$PACKD_URL/v1/webhooks" \
  | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["webhooks"][0]["id"] != int(sys.argv[1]))' "$VERIFY_API_WEBHOOK" \
  || live_fail "the fixture webhook is not the first listed"
echo "webhook $VERIFY_API_WEBHOOK, delivery $delivery"

# One worker: the run is then the seed's alone, and hypothesis does not parse source in two
# threads at once (CPython 3.11's ast is not safe for that: "AST constructor recursion depth
# mismatch"). Two runs, one seed. First the read-only operations of that complete pack (the offline routes
# and the export); then every operation with every phase, stateful included — which creates,
# deletes and resets (POST /v1/storage/reset deletes every pack, the fixture's too).
cat scripts/schemathesis.toml scripts/schemathesis-complete-pack.toml > "$report/complete-pack.toml"
run() { # run CONFIG [schemathesis run options]
  local config=$1; shift
  PYTHONPATH=scripts SCHEMATHESIS_HOOKS=schemathesis_hooks \
    schemathesis --config-file "$config" run openapi.yaml \
    --url "$PACKD_URL" --header "Authorization: Bearer $PACKD_KEY" \
    --checks all --seed "$SCHEMATHESIS_SEED" --workers 1 \
    --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-50}" --report junit,vcr --report-dir "$report" "$@"
}
rm -f "$report"/vcr-*.yaml "$report"/junit-*.xml
echo "== schemathesis ${SCHEMATHESIS_SEED:?}, run 1 of 2: the complete pack's offline resources and export"
run "$report/complete-pack.toml" --mode positive --phases examples,coverage,fuzzing --include-path-regex '^/v1/packs/\{id\}/(style\.json|sources|tiles|sprites|glyphs|export)'
echo "== schemathesis ${SCHEMATHESIS_SEED}, run 2 of 2: every operation, every phase, against packd at $PACKD_URL (fixture upstream $UPSTREAM)"
run scripts/schemathesis.toml "$@"

echo "== what the two runs reached"
python3 scripts/schemathesis_summary.py openapi.yaml "$report"/vcr-*.yaml --stateful
