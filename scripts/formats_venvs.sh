#!/usr/bin/env bash
# Test-only installs of other tools' scorer runners, for the corpus test that scores each
# published-style scorer file with its own tool (tests/integration/test_formats_corpus.py).
# Never dependencies of scorebox.
#
#   scripts/formats_venvs.sh      create or update .formats-venvs, print TOOL=PATH lines
#
# Idempotent: nothing is installed when the pinned versions are already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${SCOREBOX_FORMATS_VENVS:-$ROOT/.formats-venvs}"
PYTHON="${SCOREBOX_FORMATS_PYTHON:-python3}"
# LangSmith, Braintrust and Phoenix's client share one virtualenv; reward-kit pins
# openai==1.78.1 and needs mcp<2 to import; eval-protocol pins litellm: each its own.
TOOLS="langsmith==0.14.17 braintrust==0.48.1 arize-phoenix-client==3.5.0"
REWARD_KIT="reward-kit==0.4.1 mcp<2"
EVAL_PROTOCOL="eval-protocol==0.3.33"
PROMPTFOO="promptfoo@0.121.20"

say() { printf 'formats_venvs.sh: %s\n' "$*" >&2; }

venv() {  # venv NAME REQUIREMENTS...
    local name="$1"; shift
    local stamp
    stamp="$DIR/$name/.stamp-$(printf '%s' "$*" | sha256sum | cut -c1-12)"
    if [[ ! -f "$stamp" || ! -x "$DIR/$name/bin/python" ]]; then
        [[ -x "$DIR/$name/bin/python" ]] || "$PYTHON" -m venv "$DIR/$name"
        say "installing $* into $DIR/$name"
        "$DIR/$name/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
        touch "$stamp"
    fi
    printf '%s=%s\n' "$name" "$DIR/$name/bin/python"
}

mkdir -p "$DIR"
venv tools $TOOLS
# shellcheck disable=SC2086  # lists of requirements
venv reward_kit $REWARD_KIT
venv eval_protocol $EVAL_PROTOCOL
stamp="$DIR/promptfoo/.stamp-$(printf '%s' "$PROMPTFOO" | sha256sum | cut -c1-12)"
if [[ ! -f "$stamp" ]]; then
    mkdir -p "$DIR/promptfoo"
    [[ -f "$DIR/promptfoo/package.json" ]] || echo '{"name": "scorebox-formats", "private": true}' > "$DIR/promptfoo/package.json"
    say "installing $PROMPTFOO into $DIR/promptfoo"
    (cd "$DIR/promptfoo" && npm install --silent --no-audit --no-fund "$PROMPTFOO" >&2)
    touch "$stamp"
fi
printf 'promptfoo=%s\n' "$DIR/promptfoo/node_modules/.bin/promptfoo"
