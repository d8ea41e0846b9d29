#!/usr/bin/env bash
# A test-only virtualenv with the OpenAI client, the OpenTelemetry SDK, the OTLP/HTTP
# protobuf exporter and three instrumentations of the OpenAI client (OpenInference,
# OpenLLMetry, the official openai-v2), for tests/online: real apps export real spans to a
# live `scorebox serve`. Never a dependency of scorebox.
#
#   scripts/otel_venv.sh          create or update .scorebox/otel-venv, print its python
#
# Idempotent: nothing is installed when the pinned set is already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SCOREBOX_OTEL_VENV:-$ROOT/.scorebox/otel-venv}"
# The pins that work together (checked end to end): openai-v2 2.4b0 breaks with
# opentelemetry-util-genai >= 1.2b0 (its `instruments` module was renamed), and with
# openai >= 3 it imports `httpx`, which openai 3 no longer brings.
PINS=(
    "openai==3.57.0"
    "httpx"
    "opentelemetry-sdk==1.45.2"
    "opentelemetry-exporter-otlp-proto-http==1.45.2"
    "openinference-instrumentation-openai==0.1.66"
    "opentelemetry-instrumentation-openai==0.62.4"
    "opentelemetry-instrumentation-openai-v2==2.4b0"
    "opentelemetry-util-genai==1.1b0"
)
STAMP="$VENV/.otel-$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -c1-12)"

say() { printf 'otel_venv.sh: %s\n' "$*" >&2; }

if [[ ! -f "$STAMP" || ! -x "$VENV/bin/python" ]]; then
    PYTHON="${SCOREBOX_OTEL_PYTHON:-python3}"
    if [[ ! -x "$VENV/bin/python" ]]; then
        say "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    say "installing ${PINS[*]} from PyPI into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" >&2
    "$VENV/bin/python" -c "
import openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
" >&2
    touch "$STAMP"
fi
printf '%s\n' "$VENV/bin/python"
