# Sourced by the verify scripts: the Natural Earth fixture upstream (../shared/fixtures/serve-ne.sh,
# nginx) and a `packd serve` with an admin API key, each on a free loopback port, both stopped and
# their files removed when the sourcing script exits.
#
#   live_packd_start [packd serve flags…]
#
# sets LIVE_WORK (a temporary folder), UPSTREAM (http://127.0.0.1:PORT), STYLE_URL (the fixture's
# style), PACKD_URL, PACKD_KEY and PACKD_KEY_FILE (the admin key, also as a file). packd's log is
# $LIVE_WORK/packd.log, printed when a script fails and copied to $LIVE_LOG_COPY when that is set. Needs nginx, curl, python3 and a built packd
# ($PACKD_BIN, default `swift build --show-bin-path`/packd).

LIVE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIVE_PIDS=()

live_fail() { echo "FAIL: $*" >&2; exit 1; }

live_cleanup() {
  local status=$?
  for pid in "${LIVE_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${LIVE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "${LIVE_WORK:-}" ]; then
    [ -f "$LIVE_WORK/ne/nginx.pid" ] && kill "$(cat "$LIVE_WORK/ne/nginx.pid")" 2>/dev/null || true
    if [ -n "${LIVE_LOG_COPY:-}" ] && [ -f "$LIVE_WORK/packd.log" ]; then cp "$LIVE_WORK/packd.log" "$LIVE_LOG_COPY"; fi
    if [ "$status" != 0 ] && [ -f "$LIVE_WORK/packd.log" ]; then
      echo "--- the last lines of packd's log:" >&2
      tail -n 40 "$LIVE_WORK/packd.log" >&2
    fi
    rm -rf "$LIVE_WORK"
  fi
}

live_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

live_packd_start() {
  for tool in nginx curl python3; do
    command -v "$tool" >/dev/null || live_fail "$tool is not installed"
  done
  local fixtures="$LIVE_ROOT/../shared/fixtures"
  [ -x "$fixtures/serve-ne.sh" ] || live_fail "the fixture upstream $fixtures/serve-ne.sh is missing"
  local packd="${PACKD_BIN:-$(cd "$LIVE_ROOT" && swift build --show-bin-path)/packd}"
  [ -x "$packd" ] || live_fail "$packd is not built (swift build --product packd)"

  LIVE_WORK="$(mktemp -d "${TMPDIR:-/tmp}/packd-live.XXXXXX")"
  chmod 755 "$LIVE_WORK" # nginx's workers (another user when run as root) read the fixture below it
  trap live_cleanup EXIT

  local upstream_port port
  upstream_port=$(live_free_port)
  port=$(live_free_port)
  STYLE_URL="$("$fixtures/serve-ne.sh" "$upstream_port" "$LIVE_WORK/ne" 2>/dev/null)"
  UPSTREAM="http://127.0.0.1:$upstream_port"
  PACKD_KEY="live-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
  PACKD_KEY_FILE="$LIVE_WORK/key"
  (umask 077; printf 'admin:%s\n' "$PACKD_KEY" > "$LIVE_WORK/api-keys"; printf '%s\n' "$PACKD_KEY" > "$PACKD_KEY_FILE")
  PACKD_URL="http://127.0.0.1:$port"

  "$packd" serve --listen "127.0.0.1:$port" --database "$LIVE_WORK/packd.sqlite" \
    --api-keys-file "$LIVE_WORK/api-keys" --openapi "$LIVE_ROOT/openapi.yaml" \
    --allow-upstream-hosts 127.0.0.1 "$@" >"$LIVE_WORK/packd.log" 2>&1 &
  LIVE_PIDS+=($!)
  for _ in $(seq 1 300); do
    curl -sf "$PACKD_URL/readyz" >/dev/null && return 0
    kill -0 "${LIVE_PIDS[-1]}" 2>/dev/null || live_fail "packd exited at start"
    sleep 0.1
  done
  live_fail "packd did not become ready"
}
