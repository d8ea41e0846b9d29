"""An LLM span (decoded from OTLP) to a scorebox row: messages, output, input, metadata.

Pure: no I/O, no protobuf. The conventions read, first match wins for each field:

- the current OpenTelemetry GenAI convention: ``gen_ai.system_instructions``,
  ``gen_ai.input.messages``, ``gen_ai.output.messages`` (JSON strings on spans, structured
  values on ``gen_ai.client.inference.operation.details`` log records);
- OpenInference: ``llm.input_messages.N.message.*``, ``llm.output_messages.N.message.*``,
  then ``input.value`` / ``output.value``;
- OpenLLMetry's older flat ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``;
- the deprecated per-message events ``gen_ai.{system,user,assistant,tool}.message`` and
  ``gen_ai.choice`` (span events, or log records joined to the span).

Messages come out in OpenAI's chat shape (``role``, ``content``, ``tool_calls``,
``tool_call_id``), the shape :class:`engine.models.Row` ``messages`` has. One malformed
message is skipped and named in ``metadata.mapping_warnings``; the others are kept.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from engine.online.metadata import span_metadata

#: The log record (and event) carrying a whole operation's content, structured.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: The deprecated per-message events, by the role each stands for.
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
#: Events (span events or log records) that carry content the mapping reads.
CONTENT_EVENTS = frozenset({DETAILS_EVENT, CHOICE_EVENT, *MESSAGE_EVENTS})
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


@dataclass(frozen=True)
class Event:
    """A span event or a log record joined to the span: its name, attributes and body."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class Span:
    """One decoded span, with its resource's and scope's attributes."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    name: str
    parent_span_id: str | None = None
    kind: int = 0
    start_unix_nano: int = 0
    end_unix_nano: int = 0
    status_code: int = 0
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""


@dataclass(frozen=True)
class Mapped:
    """A span as a row. ``no_content``: neither messages nor an output were found."""

    messages: list[dict[str, Any]]
    model_output: str | None
    scenario_input: Any
    metadata: dict[str, Any]
    is_llm: bool

    @property
    def no_content(self) -> bool:
        return not self.messages and self.model_output is None

    def row(self) -> dict[str, Any]:
        """The row as stored and served (``engine.models.Row``'s field names)."""
        return {
            "messages": self.messages,
            "model_output": self.model_output,
            "scenario_input": self.scenario_input,
            "metadata": self.metadata,
        }


class _Malformed(ValueError):
    """One message that cannot be read."""


def _loads(value: Any) -> Any:
    """A JSON string parsed; a structured value unchanged."""
    if isinstance(value, str | bytes):
        return json.loads(value)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _arguments(value: Any) -> str:
    """Tool-call arguments as OpenAI has them: a JSON string."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "id": "" if call_id is None else str(call_id),
        "type": "function",
        "function": {"name": "" if name is None else str(name), "arguments": _arguments(arguments)},
    }


def _message_role(raw: Any, default_role: str | None) -> str:
    """A message's role (``default_role`` when it names none); raises when it is not an
    object or has no role."""
    if not isinstance(raw, dict):
        raise _Malformed(f"a message is an object, not {type(raw).__name__}")
    role = raw.get("role", default_role)
    if not isinstance(role, str) or not role:
        raise _Malformed("a message has no role")
    return role


def _read_parts(parts: list[Any]) -> tuple[list[str], list[dict[str, Any]], str | None]:
    """A message's parts as the chat message has them: its texts (a tool's response among
    them), its tool calls, and the id of the tool call it answers (the last one)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    answers: str | None = None
    for part in parts:
        if not isinstance(part, dict):
            continue  # one odd part: the message's other parts still count
        kind = part.get("type")
        if kind == "text" and part.get("content") is not None:
            texts.append(_text(part["content"]))
        elif kind == "tool_call":
            calls.append(_tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            answers = "" if part.get("id") is None else str(part.get("id"))
            result = part.get("response", part.get("result"))
            if result is not None:
                texts.append(_text(result))
        # reasoning, blob, uri, file parts: not text a check reads as content
    return texts, calls, answers


def _parts_message(raw: Any, default_role: str | None = None) -> dict[str, Any]:
    """One GenAI-convention message (``{role, parts: [...]}``) as a chat message.

    Also takes a message already in chat shape (``{role, content}``)."""
    role = _message_role(raw, default_role)
    parts = raw.get("parts")
    if parts is None:
        return _chat_message(raw, role)
    if not isinstance(parts, list):
        raise _Malformed("a message's parts are a list")
    texts, calls, answers = _read_parts(parts)
    out: dict[str, Any] = {"role": role}
    if answers is not None:
        out["tool_call_id"] = answers
    out["content"] = "\n".join(texts) if texts or not calls else None
    if calls:
        out["tool_calls"] = calls
    if isinstance(raw.get("finish_reason"), str):
        out["finish_reason"] = raw["finish_reason"]
    return out


def _content_text(content: Any) -> str | None:
    """Chat content: a string, or a list of ``{type: text, text}`` parts joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            _text(p.get("text", p.get("content")))
            for p in content
            if isinstance(p, dict) and p.get("text", p.get("content")) is not None
        ]
        return "\n".join(texts)
    return _text(content)


def _chat_message(raw: dict[str, Any], role: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": _content_text(raw.get("content"))}
    calls = raw.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [_any_tool_call(c) for c in calls if isinstance(c, dict)]
    for key in ("tool_call_id", "name"):
        if isinstance(raw.get(key), str):
            out[key] = raw[key]
    return out


def _any_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if isinstance(function, dict):
        return _tool_call(call.get("id"), function.get("name"), function.get("arguments"))
    return _tool_call(call.get("id"), call.get("name"), call.get("arguments"))


def _message_list(value: Any, warnings: list[str], where: str) -> list[dict[str, Any]] | None:
    """A JSON-string or structured list of messages; None when ``value`` is not usable."""
    try:
        items = _loads(value)
    except (ValueError, TypeError) as exc:
        warnings.append(f"{where}: not JSON ({exc})")
        return None
    if not isinstance(items, list):
        warnings.append(f"{where}: a list of messages, not {type(items).__name__}")
        return None
    out: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            out.append(_parts_message(item))
        except _Malformed as exc:
            warnings.append(f"{where}[{index}]: {exc}")
    return out


def _system_instructions(value: Any, warnings: list[str]) -> dict[str, Any] | None:
    try:
        parts = _loads(value)
    except (ValueError, TypeError) as exc:
        warnings.append(f"gen_ai.system_instructions: not JSON ({exc})")
        return None
    if isinstance(parts, str):
        return {"role": "system", "content": parts}
    if not isinstance(parts, list):
        warnings.append("gen_ai.system_instructions: a list of parts")
        return None
    message = _parts_message({"role": "system", "parts": parts})
    return message if message.get("content") else None


def _indexed(attributes: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """Flat ``PREFIX.N.rest`` attributes grouped by N: ``{N: {rest: value}}``."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)$")
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = pattern.match(key)
        if match:
            groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return dict(sorted(groups.items()))


def _flat_calls(flat: dict[str, Any], prefix: str, fields: tuple[str, str, str]) -> list[Any]:
    calls = _indexed(flat, prefix)
    id_key, name_key, args_key = fields
    return [_tool_call(c.get(id_key), c.get(name_key), c.get(args_key)) for c in calls.values()]


def _openinference(attributes: dict[str, Any], prefix: str, warnings: list[str]) -> list[Any]:
    out: list[dict[str, Any]] = []
    for index, flat in _indexed(attributes, prefix).items():
        role = flat.get("message.role")
        if not isinstance(role, str) or not role:
            warnings.append(f"{prefix}.{index}: no message.role")
            continue
        content: Any = flat.get("message.content")
        if content is None:
            contents = _indexed(flat, "message.contents")
            texts = [
                c["message_content.text"]
                for c in contents.values()
                if isinstance(c.get("message_content.text"), str)
            ]
            content = "\n".join(texts) if texts else None
        message: dict[str, Any] = {"role": role, "content": _content_text(content)}
        calls = _flat_calls(
            flat,
            "message.tool_calls",
            ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments"),
        )
        if calls:
            message["tool_calls"] = calls
        if isinstance(flat.get("message.tool_call_id"), str):
            message["tool_call_id"] = flat["message.tool_call_id"]
        out.append(message)
    return out


def _openllmetry(attributes: dict[str, Any], prefix: str, warnings: list[str]) -> list[Any]:
    out: list[dict[str, Any]] = []
    for index, flat in _indexed(attributes, prefix).items():
        role = flat.get("role", "assistant" if prefix == "gen_ai.completion" else None)
        if not isinstance(role, str) or not role:
            warnings.append(f"{prefix}.{index}: no role")
            continue
        content = flat.get("content")
        if isinstance(content, str) and content.startswith("["):
            with contextlib.suppress(ValueError):  # OpenLLMetry: a list of parts as JSON
                content = _content_text(json.loads(content))
        message: dict[str, Any] = {"role": role, "content": _content_text(content)}
        calls = _flat_calls(flat, "tool_calls", ("id", "name", "arguments"))
        if calls:
            message["tool_calls"] = calls
        for key in ("tool_call_id", "finish_reason"):
            if isinstance(flat.get(key), str):
                message[key] = flat[key]
        out.append(message)
    return out


def _event_payload(event: Event) -> dict[str, Any]:
    """An event's content: its body (log records) over its attributes (span events)."""
    payload = dict(event.attributes)
    body = event.body
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = {"content": body}
    if isinstance(body, dict):
        payload.update(body)
    return payload


def _message_events(events: tuple[Event, ...], warnings: list[str]) -> tuple[list[Any], list[Any]]:
    inputs: list[dict[str, Any]] = []
    choices: list[dict[str, Any]] = []
    for event in events:
        try:
            if event.name in MESSAGE_EVENTS:
                payload = _event_payload(event)
                role = payload.get("role") or MESSAGE_EVENTS[event.name]
                inputs.append(_chat_message(payload, str(role)))
            elif event.name == CHOICE_EVENT:
                payload = _event_payload(event)
                message = payload.get("message", payload)
                if not isinstance(message, dict):
                    raise _Malformed("its message is an object")
                choice = _chat_message(message, str(message.get("role") or "assistant"))
                if "tool_calls" in payload and "tool_calls" not in choice:
                    choice = _chat_message(
                        {**message, "tool_calls": payload["tool_calls"]}, "assistant"
                    )
                if isinstance(payload.get("finish_reason"), str):
                    choice["finish_reason"] = payload["finish_reason"]
                choices.append(choice)
        except (_Malformed, TypeError, ValueError) as exc:
            warnings.append(f"event {event.name}: {exc}")
    return inputs, choices


def _details(events: tuple[Event, ...]) -> dict[str, Any]:
    """The attributes of the operation-details record(s), structured values."""
    merged: dict[str, Any] = {}
    for event in events:
        if event.name == DETAILS_EVENT:
            merged.update(_event_payload(event))
    return merged


def _output_value(attributes: dict[str, Any]) -> str | None:
    """OpenInference's ``output.value``: a chat completion's first choice, else the text."""
    value = attributes.get("output.value")
    if value is None:
        return None
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
        content = parsed["choices"][0]["message"]["content"]
        if isinstance(content, str):
            return content
    except (ValueError, TypeError, KeyError, IndexError):
        pass
    return _text(value)


def _output_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if content:
        return str(content)
    calls = message.get("tool_calls")
    return json.dumps(calls) if calls else content


def _inputs(span: Span, a: dict[str, Any], details: dict[str, Any], warnings: list[str]) -> Any:
    """The input messages and where they came from."""
    for source in (a, details):
        if "gen_ai.input.messages" in source:
            found = _message_list(
                source["gen_ai.input.messages"], warnings, "gen_ai.input.messages"
            )
            if found is not None:
                system = source.get("gen_ai.system_instructions")
                head = _system_instructions(system, warnings) if system is not None else None
                return ([head] if head else []) + found, "gen_ai.input.messages"
    found = _openinference(a, "llm.input_messages", warnings)
    if found:
        return found, "llm.input_messages"
    found = _openllmetry(a, "gen_ai.prompt", warnings)
    if found:
        return found, "gen_ai.prompt"
    events, _ = _message_events(span.events, warnings)
    if events:
        return events, "events"
    return [], None


def _outputs(span: Span, a: dict[str, Any], details: dict[str, Any], warnings: list[str]) -> Any:
    for source in (a, details):
        if "gen_ai.output.messages" in source:
            found = _message_list(
                source["gen_ai.output.messages"], warnings, "gen_ai.output.messages"
            )
            if found:
                return found, "gen_ai.output.messages"
    found = _openinference(a, "llm.output_messages", warnings)
    if found:
        if isinstance(a.get("llm.finish_reason"), str):  # OpenInference: one, on the span
            found[0].setdefault("finish_reason", a["llm.finish_reason"])
        return found, "llm.output_messages"
    found = _openllmetry(a, "gen_ai.completion", warnings)
    if found:
        return found, "gen_ai.completion"
    _, choices = _message_events(span.events, [])  # warnings already taken by _inputs
    if choices:
        return choices, "events"
    return [], None


def map_span(span: Span) -> Mapped:
    """``span`` (its events include log records joined to it) as a row."""
    a = span.attributes
    warnings: list[str] = []
    details = _details(span.events)
    inputs, input_source = _inputs(span, a, details, warnings)
    outputs, output_source = _outputs(span, a, details, warnings)
    model_output = _output_text(outputs[0]) if outputs else _output_value(a)
    if not outputs and model_output is not None:
        output_source = "output.value"
    user_turns = [m for m in inputs if m.get("role") == "user" and m.get("content")]
    scenario_input: Any = user_turns[-1]["content"] if user_turns else a.get("input.value")
    messages = [*inputs, outputs[0]] if inputs and outputs else list(inputs)
    meta = span_metadata(span, {**details, **a} if details else a, outputs)
    meta["content_source"] = {"input": input_source, "output": output_source}
    if warnings:
        meta["mapping_warnings"] = warnings
    operation = meta.get("operation")
    is_llm = (
        operation in LLM_OPERATIONS
        or str(a.get("openinference.span.kind", "")).upper() == "LLM"
        or bool(inputs or outputs)
    )
    mapped = Mapped(messages, model_output, scenario_input, meta, is_llm)
    meta["no_content"] = mapped.no_content
    return mapped


def search_text(mapped: Mapped, limit: int = 65_536) -> str:
    """The row's words, for the span list's text filter: messages and output, bounded.
    The output is left out when it is the last message's text already (a chat's reply)."""
    pieces = [str(m.get("content") or "") for m in mapped.messages]
    output = mapped.model_output or ""
    if not pieces or pieces[-1] != output:
        pieces.append(output)
    return "\n".join(p for p in pieces if p)[:limit]
