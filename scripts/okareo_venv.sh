#!/usr/bin/env bash
# A test-only virtualenv with Okareo's Python SDK (`okareo` from PyPI), for the tests that
# drive the /v0 Okareo-compatible API with the real client. Never a dependency of scorebox.
#
#   scripts/okareo_venv.sh          create or update .okareo-venv, print its python
#
# Idempotent: nothing is installed when the pinned version is already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SCOREBOX_OKAREO_VENV:-$ROOT/.okareo-venv}"
VERSION="${SCOREBOX_OKAREO_VERSION:-0.0.162}"
# Okareo's own shipped tests (okareo_tests in the wheel) need a runner and `requests`,
# which the wheel does not bring: the versions of scorebox's lock (requirements/dev.lock).
RUNNER="$(grep -E '^(pytest|requests)==' "$ROOT/requirements/dev.lock" | cut -d' ' -f1 | tr '\n' ' ')"
STAMP="$VENV/.okareo-$VERSION-$(printf '%s' "$RUNNER" | sha256sum | cut -c1-12)"

say() { printf 'okareo_venv.sh: %s\n' "$*" >&2; }

if [[ ! -f "$STAMP" || ! -x "$VENV/bin/python" ]]; then
    PYTHON="${SCOREBOX_OKAREO_PYTHON:-python3}"
    if [[ ! -x "$VENV/bin/python" ]]; then
        say "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    say "installing okareo==$VERSION from PyPI into $VENV"
    # shellcheck disable=SC2086  # RUNNER is a list of requirements
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "okareo==$VERSION" $RUNNER >&2
    "$VENV/bin/python" -c "import okareo, okareo_api_client, okareo_tests, pytest, requests" >&2
    touch "$STAMP"
fi
printf '%s\n' "$VENV/bin/python"
