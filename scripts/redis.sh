#!/usr/bin/env bash
# A throwaway Redis server (the broker of distributed mode) for the tests.
#
#   url="$(scripts/redis.sh start)"   # installs redis-server from Debian if missing (root),
#                                     # starts it on a free loopback port, prints the URL
#   scripts/redis.sh stop "$url"      # stops it and removes its directory
#   scripts/redis.sh restart "$url"   # stops it and starts it again on the same port
#
# Typical use: export SCOREBOX_TEST_REDIS_URL="$(scripts/redis.sh start)"
set -euo pipefail

log() { echo "redis.sh: $*" >&2; }

redis_bin() {
  if ! command -v redis-server >/dev/null; then
    if [[ "$(id -u)" != 0 ]]; then
      log "redis-server is not installed: run as root, or: sudo apt-get install -y redis-server"
      exit 1
    fi
    log "installing redis-server from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends redis-server >&2
  fi
  command -v redis-server
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_of() { sed -E 's#.*:([0-9]+)(/.*)?$#\1#' <<<"$1"; }

launch() {
  local port="$1" dir="$2" bin
  bin="$(redis_bin)"
  # No persistence: a restart loses the queue, which is what the tests want to survive.
  "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  local waited=0
  until redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; do
    if [[ "$waited" -ge 100 ]]; then
      cat "$dir/redis.log" >&2 || true
      log "redis-server did not answer on port $port"
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

start() {
  local port dir
  port="$(free_port)"
  dir="${TMPDIR:-/tmp}/scorebox-redis.$port"
  rm -rf "$dir"
  mkdir -p "$dir"
  launch "$port" "$dir"
  echo "redis://127.0.0.1:$port/0"
}

halt() {
  local port="$1" dir="$2"
  if [[ -f "$dir/redis.pid" ]]; then
    local pid
    pid="$(cat "$dir/redis.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

stop() {
  local url="${1:?usage: redis.sh stop URL}" port dir
  port="$(port_of "$url")"
  dir="${TMPDIR:-/tmp}/scorebox-redis.$port"
  [[ -d "$dir" ]] || { log "no server at $dir"; return 0; }
  halt "$port" "$dir"
  rm -rf "$dir"
}

restart() {
  local url="${1:?usage: redis.sh restart URL}" port dir
  port="$(port_of "$url")"
  dir="${TMPDIR:-/tmp}/scorebox-redis.$port"
  halt "$port" "$dir"
  launch "$port" "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  restart) shift; restart "$@" ;;
  *) echo "usage: $0 start | stop URL | restart URL" >&2; exit 2 ;;
esac
