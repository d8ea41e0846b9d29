# mypy: ignore-errors
# (run in the test-only venv of scripts/otel_venv.sh, where the OpenTelemetry SDK lives)
"""A small app instrumented as a team would instrument theirs: one chat completion through
the ``openai`` client, inside a request span, exported over OTLP/HTTP (protobuf, gzip).

    python instrumented_app.py openinference|openllmetry|openai-v2

The endpoint and key come from the standard variables, ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
``OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer <key>``; the model server from
``LLM_BASE_URL``. For openai-v2, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
(``span_only`` or ``event_only``) says where the content goes. Prints the trace id.
"""

from __future__ import annotations

import json
import os
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

instrumentation = sys.argv[1]
resource = Resource.create({"service.name": "support-bot", "deployment.environment.name": "ci"})
tracer_provider = TracerProvider(resource=resource)
tracer_provider.add_span_processor(
    SimpleSpanProcessor(OTLPSpanExporter(compression=Compression.Gzip))
)
trace.set_tracer_provider(tracer_provider)
logger_provider = LoggerProvider(resource=resource)
logger_provider.add_log_record_processor(
    SimpleLogRecordProcessor(OTLPLogExporter(compression=Compression.Gzip))
)

if instrumentation == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
elif instrumentation == "openllmetry":
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
elif instrumentation == "openai-v2":
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    set_logger_provider(logger_provider)
    OpenAIInstrumentor().instrument(
        tracer_provider=tracer_provider, logger_provider=logger_provider
    )
else:
    raise SystemExit(f"unknown instrumentation {instrumentation!r}")

from openai import OpenAI  # noqa: E402 (after instrumenting, as the instrumentations ask)

client = OpenAI(base_url=os.environ["LLM_BASE_URL"], api_key="test-key")
with trace.get_tracer("support-bot").start_as_current_span("POST /ask") as request_span:
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are a geography tutor."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        temperature=0.2,
        max_tokens=50,
    )
    trace_id = format(request_span.get_span_context().trace_id, "032x")
tracer_provider.shutdown()  # flush
logger_provider.shutdown()
print(json.dumps({"trace_id": trace_id, "answer": answer.choices[0].message.content}))
