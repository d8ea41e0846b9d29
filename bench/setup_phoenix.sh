#!/usr/bin/env bash
# The OTLP ingestion bench's peer in a virtualenv of its own:
#
#   bench/setup_phoenix.sh          creates bench/.venv-phoenix (idempotent)
#
# arize-phoenix (`phoenix serve`, its OTLP/HTTP receiver on /v1/traces) is installed here
# only, never in scorebox's dependencies; `python -m bench.bench_ingest_peer` starts it
# with this venv's python.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/bench/.venv-phoenix"
REQUIREMENTS=("arize-phoenix==20.26.1")
STAMP="$VENV/.installed"
WANT="$(printf '%s\n' "${REQUIREMENTS[@]}" | sha256sum | cut -d' ' -f1)"

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "setup_phoenix.sh: $VENV is up to date" >&2
    exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
printf '%s\n' "$WANT" >"$STAMP"
echo "setup_phoenix.sh: arize-phoenix installed in $VENV" >&2
