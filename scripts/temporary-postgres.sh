# Sourced by scripts that need a PostgreSQL of their own (verify-dashboard's cluster run), as the
# tests make theirs (Tests/PostgresTestSupport/TemporaryPostgres.swift): initdb into a folder,
# the server on a Unix socket there, trusted local connections, stopped by the caller. As root
# (PostgreSQL refuses it), the server runs as the unprivileged user packd-postgres, created when
# missing, through setpriv.
#
#   temporary_postgres_start DIR   sets PG_URL (postgresql://packd@<socket dir>:5432/packd)
#   temporary_postgres_stop DIR

temporary_postgres_bin() {
  if [ -n "${PACKD_POSTGRES_BIN:-}" ]; then echo "$PACKD_POSTGRES_BIN"; return; fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -n 1)
  [ -n "$newest" ] && [ -x "$newest/initdb" ] && { echo "$newest"; return; }
  dirname "$(command -v initdb)"
}

temporary_postgres_as() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid="$(id -u packd-postgres)" --regid="$(id -g packd-postgres)" --clear-groups --reset-env "$@"
  else
    "$@"
  fi
}

temporary_postgres_start() {
  local dir=$1 bin
  bin=$(temporary_postgres_bin) || return 1
  [ -x "$bin/initdb" ] || { echo "PostgreSQL's initdb not found (apt-get install postgresql)" >&2; return 1; }
  if [ "$(id -u)" = 0 ] && ! id packd-postgres >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin packd-postgres
  fi
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown packd-postgres:packd-postgres "$dir"
  temporary_postgres_as "$bin/initdb" -D "$dir/data" -U packd -A trust -E UTF8 --locale=C --no-sync --no-instructions >/dev/null
  temporary_postgres_as "$bin/pg_ctl" start -w -t 120 -D "$dir/data" -l "$dir/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c port=5432 -c fsync=off" >/dev/null
  temporary_postgres_as "$bin/psql" -h "$dir" -U packd -d postgres -qc "CREATE DATABASE packd" >/dev/null
  PG_URL="postgresql://packd@$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$dir"):5432/packd"
}

temporary_postgres_stop() {
  local dir=$1
  [ -d "$dir/data" ] && temporary_postgres_as "$(temporary_postgres_bin)/pg_ctl" stop -D "$dir/data" -m immediate -w >/dev/null 2>&1
  return 0
}
