#!/usr/bin/env bash
# The benchmark's own virtualenv for the peers scorebox is compared with:
#
#   bench/setup_peers.sh          creates bench/.venv-peers (idempotent)
#
# epicbox 1.1.0 and llm-sandbox are installed here only, never in scorebox's
# dependencies; `python -m bench` runs them in a subprocess with this venv's python.
# epicbox 1.1.0 (2019) needs urllib3<2 (its retry settings use the removed
# `method_whitelist`). The peers' image, made from the sandbox image, is built by
# `python -m bench` itself (bench/peers.py) so it always matches the image scorebox uses.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/bench/.venv-peers"
REQUIREMENTS=("epicbox==1.1.0" "urllib3<2" "llm-sandbox==0.3.46" "docker>=7")
STAMP="$VENV/.installed"
WANT="$(printf '%s\n' "${REQUIREMENTS[@]}" | sha256sum | cut -d' ' -f1)"

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "setup_peers.sh: $VENV is up to date" >&2
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV" 2>/dev/null || {
        if [[ "$(id -u)" -eq 0 ]]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            rm -rf "$VENV"
            python3 -m venv "$VENV"
        else
            echo "setup_peers.sh: python3 -m venv failed: run \`sudo apt-get install python3-venv\`" >&2
            exit 1
        fi
    }
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
printf '%s\n' "$WANT" >"$STAMP"
echo "setup_peers.sh: peers installed in $VENV" >&2
