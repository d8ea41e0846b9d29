#!/usr/bin/env bash
# A throwaway PostgreSQL server for the API tests.
#
#   url="$(scripts/postgres.sh start)"   # installs postgresql from Debian if missing (root),
#                                        # starts a cluster on a free port, prints the URL
#   scripts/postgres.sh stop "$url"      # stops it and removes its directory
#   scripts/postgres.sh pause "$url"     # stops the server (fast shutdown), keeps its data
#   scripts/postgres.sh resume "$url"    # starts it again on the same port and data
#
# Typical use: export SCOREBOX_TEST_POSTGRES_URL="$(scripts/postgres.sh start)"
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

pg_bin() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [[ -z "$dir" ]]; then
    if [[ "$(id -u)" != 0 ]]; then
      log "PostgreSQL is not installed: run as root, or: sudo apt-get install -y postgresql"
      exit 1
    fi
    log "installing postgresql from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    dir="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  fi
  echo "$dir"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Run a command as the cluster's owner: postgres when we are root (initdb refuses root).
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    (cd / && runuser -u postgres -- "$@")  # from /: the caller's cwd may be unreadable to postgres
  else
    "$@"
  fi
}

launch() {
  local bin="$1" port="$2" dir="$3"
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }
}

cluster_of() {
  local url="${1:?usage: postgres.sh stop|pause|resume URL}"
  PORT="$(sed -E 's#.*:([0-9]+)/.*#\1#' <<<"$url")"
  DIR="${TMPDIR:-/tmp}/scorebox-pg.$PORT"
}

pause() {
  cluster_of "$@"
  [[ -d "$DIR/data" ]] || { log "no cluster at $DIR"; exit 1; }
  as_owner "$(pg_bin)/pg_ctl" -D "$DIR/data" -m fast -w stop >&2
}

resume() {
  cluster_of "$@"
  [[ -d "$DIR/data" ]] || { log "no cluster at $DIR"; exit 1; }
  launch "$(pg_bin)" "$PORT" "$DIR"
}

start() {
  local bin port dir
  bin="$(pg_bin)"
  port="$(free_port)"
  dir="${TMPDIR:-/tmp}/scorebox-pg.$port"
  rm -rf "$dir"
  mkdir -p "$dir"
  if [[ "$(id -u)" == 0 ]]; then chown postgres: "$dir"; fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  launch "$bin" "$port" "$dir"
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres scorebox_test
  echo "postgresql+psycopg://postgres@127.0.0.1:$port/scorebox_test"
}

stop() {
  cluster_of "$@"
  [[ -d "$DIR/data" ]] || { log "no cluster at $DIR"; return 0; }
  as_owner "$(pg_bin)/pg_ctl" -D "$DIR/data" -m immediate -w stop >&2 || true
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  pause) shift; pause "$@" ;;
  resume) shift; resume "$@" ;;
  *) echo "usage: $0 start | stop URL | pause URL | resume URL" >&2; exit 2 ;;
esac
