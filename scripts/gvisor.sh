#!/usr/bin/env bash
# Install gVisor's runsc from Debian and register it with the local Docker engine.
#
#   scripts/gvisor.sh          install + register + verify (idempotent)
#   scripts/gvisor.sh check    only verify that `docker info` lists runsc
#   scripts/gvisor.sh merge    only merge the runsc entry into daemon.json (no install,
#                              no reload); prints "changed" or "unchanged"
#
# Registration merges {"runtimes": {"runsc": {"path": "/usr/bin/runsc",
# "runtimeArgs": ["--network=none"]}}} into /etc/docker/daemon.json, keeping
# every other key the file holds, then asks dockerd to reload its configuration
# (SIGHUP; runtimes are reloadable, running containers are untouched).
# Needs root for the install and the registration; as another user it prints
# the commands to run. SCOREBOX_DOCKER_DAEMON_JSON names another daemon.json.
set -euo pipefail

DAEMON_JSON="${SCOREBOX_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
RUNSC=/usr/bin/runsc
export DEBIAN_FRONTEND=noninteractive

say() { printf 'gvisor.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
is_root() { [[ "$(id -u)" -eq 0 ]]; }

runsc_listed() {
    docker info --format '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}' 2>/dev/null \
        | tr ' ' '\n' | grep -qx runsc
}

install_runsc() {
    [[ -x "$RUNSC" ]] && return 0
    is_root || die "runsc is not installed: run \`sudo apt-get install -y runsc\`, then run this again"
    say "apt-get install runsc"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends runsc >/dev/null
    [[ -x "$RUNSC" ]] || die "apt-get installed runsc but $RUNSC is missing"
}

# Prints "changed" when the file was rewritten, "unchanged" otherwise.
merge_daemon_json() {
    python3 - "$DAEMON_JSON" "$RUNSC" <<'PY'
import json, os, sys, tempfile

path, runsc = sys.argv[1], sys.argv[2]
want = {"path": runsc, "runtimeArgs": ["--network=none"]}
config = {}
if os.path.exists(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if text.strip():
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            sys.exit(f"{path} is not valid JSON ({exc}): fix it by hand, then run this again")
    if not isinstance(config, dict):
        sys.exit(f"{path} does not hold a JSON object: fix it by hand, then run this again")
runtimes = config.setdefault("runtimes", {})
if not isinstance(runtimes, dict):
    sys.exit(f'{path}: "runtimes" is not an object: fix it by hand, then run this again')
if runtimes.get("runsc") == want:
    print("unchanged")
    sys.exit(0)
runtimes["runsc"] = want
os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".daemon.json.")
with os.fdopen(fd, "w", encoding="utf-8") as handle:
    json.dump(config, handle, indent=2, sort_keys=True)
    handle.write("\n")
os.chmod(tmp, 0o644)
os.replace(tmp, path)
print("changed")
PY
}

reload_dockerd() {
    local pids
    pids="$(pgrep -x dockerd || true)"
    if [[ -z "$pids" ]]; then
        die "dockerd is not running on this host: start it (scripts/dev.sh setup), then run this again"
    fi
    say "reloading dockerd (SIGHUP)"
    # shellcheck disable=SC2086
    kill -HUP $pids
    local waited=0
    until runsc_listed; do
        if [[ "$waited" -ge 30 ]]; then
            die "dockerd did not list runsc 30 s after a reload: see its log (journalctl -u docker, or .scorebox/dockerd.log)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

register() {
    if runsc_listed && [[ -f "$DAEMON_JSON" ]] \
        && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])).get("runtimes",{}).get("runsc",{}); sys.exit(0 if r.get("path")==sys.argv[2] and r.get("runtimeArgs")==["--network=none"] else 1)' \
            "$DAEMON_JSON" "$RUNSC" 2>/dev/null; then
        return 0
    fi
    is_root || die "runsc is not registered with Docker: as root, add
    {\"runtimes\": {\"runsc\": {\"path\": \"$RUNSC\", \"runtimeArgs\": [\"--network=none\"]}}}
to $DAEMON_JSON and send dockerd a SIGHUP (sudo pkill -HUP -x dockerd), or run this script as root"
    local outcome
    outcome="$(merge_daemon_json)" || die "could not update $DAEMON_JSON"
    say "$DAEMON_JSON: runsc $outcome"
    reload_dockerd
}

verify() {
    runsc_listed || die "docker info does not list runsc: run scripts/gvisor.sh as root"
    say "runsc is registered with Docker"
}

case "${1:-}" in
    "") install_runsc; register; verify ;;
    check) verify ;;
    merge) merge_daemon_json ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
