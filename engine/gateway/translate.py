"""The model gateway's pure half: each provider's HTTP shape <-> one chat request.

A check's client sends one of three wire formats to the gateway; each becomes one
:class:`ChatRequest` (OpenAI-style messages, the model asked for, parameters, and what the
reply must look like), answered by the operator's OpenAI-compatible endpoint, and the
:class:`~engine.llm.Completion` is rendered back in the shape the client expects:

* OpenAI chat completions (``POST .../chat/completions``): ``response_format`` passes through;
* Cohere chat v1 (``POST /v1/chat``: ``message``, ``preamble``, ``chat_history`` -> ``text``)
  and v2 (``POST /v2/chat``: ``messages`` -> ``message.content[].text``);
* Gemini ``generateContent`` as google-genai sends it (``contents`` with the history a chat
  resends, ``systemInstruction``, ``generationConfig``). A ``responseSchema`` with
  ``text/x.enum`` is asked for upstream as a JSON-schema ``response_format`` holding one
  string, with the allowed values also in the prompt; ``application/json`` with a schema
  is asked for as that schema. The reply is checked against the schema before the check sees
  it (:func:`conform`), so google-genai's ``response.parsed`` is a member of the check's enum.

No I/O here: the host half (:mod:`engine.gateway.service`) does the calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.errors import ScoreboxError
from engine.llm import Completion


class GatewayRequestError(ScoreboxError):
    """A request the gateway cannot serve (bad shape, unsupported feature): the check's 4xx."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Provider(StrEnum):
    OPENAI = "openai"
    COHERE_V1 = "cohere_v1"
    COHERE_V2 = "cohere_v2"
    GEMINI = "gemini"


@dataclass(frozen=True)
class Expectation:
    """What the reply must be: one of ``values`` (an enum) or JSON fitting ``schema``."""

    values: tuple[str, ...] | None = None
    schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ChatRequest:
    """One chat request, whatever client sent it."""

    provider: Provider
    messages: tuple[Mapping[str, str], ...]
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    expect: Expectation | None = None
    history: tuple[Mapping[str, str], ...] = field(default=())  # Cohere v1: echoed back


_GEMINI_PATH = re.compile(
    r"^/(?:v1|v1beta|v1alpha)/models/([A-Za-z0-9._-]{1,128}):generateContent$"
)
_ROLES = {"system", "user", "assistant", "developer"}
_COHERE_V1_ROLES = {"USER": "user", "CHATBOT": "assistant", "SYSTEM": "system"}


def provider_of(path: str) -> Provider | None:
    """Which client's API ``path`` belongs to (None: none the gateway serves)."""
    route = path.split("?", 1)[0]
    if route.endswith("/chat/completions"):
        return Provider.OPENAI
    if route == "/v1/chat":
        return Provider.COHERE_V1
    if route == "/v2/chat":
        return Provider.COHERE_V2
    if _GEMINI_PATH.match(route):
        return Provider.GEMINI
    return None


def parse_request(method: str, path: str, body: str) -> ChatRequest:
    """The chat request in one HTTP request from a check; GatewayRequestError if none."""
    route = path.split("?", 1)[0]
    provider = provider_of(route)
    if provider is None:
        raise GatewayRequestError(
            f"the scorebox model gateway serves chat only (OpenAI /v1/chat/completions, Cohere "
            f"/v1/chat and /v2/chat, Gemini models/*:generateContent), not {method} {route}",
            404,
        )
    if method != "POST":
        raise GatewayRequestError(f"{route} takes POST, not {method}", 405)
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise GatewayRequestError(f"the request body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise GatewayRequestError("the request body must be a JSON object")
    if document.get("stream") or document.get("stream_options"):
        raise GatewayRequestError("streaming is not supported by the scorebox model gateway")
    if provider is Provider.OPENAI:
        return _openai(document)
    if provider is Provider.COHERE_V1:
        return _cohere_v1(document)
    if provider is Provider.COHERE_V2:
        return _cohere_v2(document)
    match = _GEMINI_PATH.match(route)
    assert match is not None  # nosec B101 (matched above)
    return _gemini(document, match.group(1))


# -- shared helpers ---------------------------------------------------------------


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or a list of text parts (``{"type": "text", "text"}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                raise GatewayRequestError(f"{where}: only text parts are supported")
        return "".join(pieces)
    raise GatewayRequestError(f"{where}: the content must be text")


def _number(document: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        value = document.get(name)
        if value is None:
            continue
        if type(value) not in (int, float):
            raise GatewayRequestError(f"{name} must be a number")
        return float(value)
    return None


def _integer(document: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = document.get(name)
        if value is None:
            continue
        if type(value) is not int or value < 1:
            raise GatewayRequestError(f"{name} must be a positive integer")
        return int(value)
    return None


def _model(document: Mapping[str, Any]) -> str | None:
    model = document.get("model")
    if model is None:
        return None
    if not isinstance(model, str) or not model or len(model) > 128:
        raise GatewayRequestError("model must be a non-empty string")
    return model


def _json_schema_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": dict(schema)}}


# -- OpenAI -----------------------------------------------------------------------


def _openai(document: Mapping[str, Any]) -> ChatRequest:
    for unsupported in ("tools", "functions", "tool_choice", "audio", "logprobs"):
        if document.get(unsupported):
            raise GatewayRequestError(f"{unsupported} is not supported by the scorebox gateway")
    if document.get("n") not in (None, 1):
        raise GatewayRequestError("n must be 1 through the scorebox gateway")
    raw = document.get("messages")
    if not isinstance(raw, list) or not raw:
        raise GatewayRequestError("messages must be a non-empty list")
    messages = []
    for index, message in enumerate(raw):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise GatewayRequestError(
                f"messages[{index}]: role must be one of {', '.join(sorted(_ROLES))}"
            )
        role = "system" if message["role"] == "developer" else message["role"]
        messages.append(
            {"role": role, "content": _text(message.get("content"), f"messages[{index}]")}
        )
    response_format = document.get("response_format")
    if response_format is not None and not isinstance(response_format, dict):
        raise GatewayRequestError("response_format must be an object")
    return ChatRequest(
        Provider.OPENAI,
        tuple(messages),
        model=_model(document),
        temperature=_number(document, "temperature"),
        max_tokens=_integer(document, "max_completion_tokens", "max_tokens"),
        response_format=response_format,
    )


def render_openai(
    completion: Completion, served_by: str, created: int, request_id: int
) -> dict[str, Any]:
    usage = completion.usage
    return {
        "id": f"chatcmpl-scorebox-{request_id}",
        "object": "chat.completion",
        "created": created,
        "model": served_by,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": completion.text, "refusal": None},
                "finish_reason": completion.finish_reason or "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }


# -- Cohere -----------------------------------------------------------------------


def _cohere_format(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fmt = document.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object"):
        raise GatewayRequestError("response_format.type must be text or json_object")
    if fmt["type"] == "text":
        return None
    schema = fmt.get("json_schema", fmt.get("schema"))
    if isinstance(schema, dict):
        return _json_schema_format(schema)
    return {"type": "json_object"}


def _cohere_v1(document: Mapping[str, Any]) -> ChatRequest:
    message = document.get("message")
    if not isinstance(message, str) or not message:
        raise GatewayRequestError("message must be a non-empty string")
    messages: list[Mapping[str, str]] = []
    preamble = document.get("preamble")
    if isinstance(preamble, str) and preamble:
        messages.append({"role": "system", "content": preamble})
    history = document.get("chat_history") or []
    if not isinstance(history, list):
        raise GatewayRequestError("chat_history must be a list")
    echoed: list[Mapping[str, str]] = []
    for index, turn in enumerate(history):
        role = turn.get("role") if isinstance(turn, dict) else None
        text = turn.get("message") if isinstance(turn, dict) else None
        if role not in _COHERE_V1_ROLES or not isinstance(text, str):
            raise GatewayRequestError(
                f"chat_history[{index}]: needs role USER, CHATBOT or SYSTEM and a message"
            )
        messages.append({"role": _COHERE_V1_ROLES[role], "content": text})
        echoed.append({"role": role, "message": text})
    messages.append({"role": "user", "content": message})
    echoed.append({"role": "USER", "message": message})
    return ChatRequest(
        Provider.COHERE_V1,
        tuple(messages),
        model=_model(document),
        temperature=_number(document, "temperature"),
        max_tokens=_integer(document, "max_tokens"),
        response_format=_cohere_format(document),
        history=tuple(echoed),
    )


def _cohere_v2(document: Mapping[str, Any]) -> ChatRequest:
    raw = document.get("messages")
    if not isinstance(raw, list) or not raw:
        raise GatewayRequestError("messages must be a non-empty list")
    if document.get("tools"):
        raise GatewayRequestError("tools are not supported by the scorebox gateway")
    messages = []
    for index, message in enumerate(raw):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant"):
            raise GatewayRequestError(f"messages[{index}]: role must be system, user or assistant")
        messages.append(
            {"role": role, "content": _text(message.get("content"), f"messages[{index}]")}
        )
    return ChatRequest(
        Provider.COHERE_V2,
        tuple(messages),
        model=_model(document),
        temperature=_number(document, "temperature"),
        max_tokens=_integer(document, "max_tokens"),
        response_format=_cohere_format(document),
    )


def _cohere_finish(completion: Completion) -> str:
    return "MAX_TOKENS" if completion.finish_reason == "length" else "COMPLETE"


def _cohere_usage(completion: Completion) -> dict[str, Any]:
    counts = {
        "input_tokens": completion.usage.prompt_tokens,
        "output_tokens": completion.usage.completion_tokens,
    }
    return {"billed_units": dict(counts), "tokens": dict(counts)}


def render_cohere_v1(
    request: ChatRequest, completion: Completion, request_id: int
) -> dict[str, Any]:
    return {
        "response_id": f"scorebox-{request_id}",
        "generation_id": f"scorebox-{request_id}",
        "text": completion.text,
        "finish_reason": _cohere_finish(completion),
        "chat_history": [*request.history, {"role": "CHATBOT", "message": completion.text}],
        "meta": {"api_version": {"version": "1"}, **_cohere_usage(completion)},
    }


def render_cohere_v2(completion: Completion, request_id: int) -> dict[str, Any]:
    return {
        "id": f"scorebox-{request_id}",
        "finish_reason": _cohere_finish(completion),
        "message": {"role": "assistant", "content": [{"type": "text", "text": completion.text}]},
        "usage": _cohere_usage(completion),
    }


# -- Gemini -----------------------------------------------------------------------


def _gemini_parts(content: Any, where: str) -> str:
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        raise GatewayRequestError(f"{where}: needs parts")
    pieces = []
    for part in content["parts"]:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise GatewayRequestError(f"{where}: only text parts are supported")
        if part.get("thought"):
            continue
        pieces.append(part["text"])
    return "".join(pieces)


def _pick(document: Mapping[str, Any], camel: str, snake: str) -> Any:
    return document.get(camel, document.get(snake))


def gemini_schema_to_json(schema: Any) -> dict[str, Any]:
    """An OpenAPI-style Gemini ``Schema`` (``type: STRING``...) as a JSON schema."""
    if not isinstance(schema, dict):
        raise GatewayRequestError("responseSchema must be an object")
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if isinstance(kind, str):
        out["type"] = kind.lower()
    if isinstance(schema.get("enum"), list):
        out["enum"] = [str(v) for v in schema["enum"]]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: gemini_schema_to_json(v) for k, v in schema["properties"].items()}
        out["additionalProperties"] = False
    if isinstance(schema.get("required"), list):
        out["required"] = [str(v) for v in schema["required"]]
    if "items" in schema:
        out["items"] = gemini_schema_to_json(schema["items"])
    if schema.get("nullable") is True and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def _gemini_expect(
    config: Mapping[str, Any], messages: list[dict[str, str]]
) -> tuple[Mapping[str, Any] | None, Expectation | None]:
    mime = _pick(config, "responseMimeType", "response_mime_type")
    schema = _pick(config, "responseSchema", "response_schema")
    json_schema = _pick(config, "responseJsonSchema", "response_json_schema")
    if mime == "text/x.enum":
        values = schema.get("enum") if isinstance(schema, dict) else None
        if not isinstance(values, list) or not values:
            raise GatewayRequestError("text/x.enum needs a responseSchema with enum values")
        allowed = [str(v) for v in values]
        messages.append(
            {
                "role": "system",
                "content": "Answer with exactly one of these values and nothing else: "
                + ", ".join(json.dumps(v) for v in allowed)
                + '. Reply as JSON: {"value": <one of them>}.',
            }
        )
        fmt = _json_schema_format(
            {
                "type": "object",
                "properties": {"value": {"type": "string", "enum": allowed}},
                "required": ["value"],
                "additionalProperties": False,
            }
        )
        return fmt, Expectation(values=tuple(allowed))
    if mime == "application/json":
        if isinstance(json_schema, dict):
            return _json_schema_format(json_schema), Expectation(schema=json_schema)
        if isinstance(schema, dict):
            converted = gemini_schema_to_json(schema)
            return _json_schema_format(converted), Expectation(schema=converted)
        return {"type": "json_object"}, Expectation(schema={})
    if mime not in (None, "text/plain"):
        raise GatewayRequestError(f"responseMimeType {mime!r} is not supported by the gateway")
    return None, None


def _gemini(document: Mapping[str, Any], model: str) -> ChatRequest:
    if document.get("tools"):
        raise GatewayRequestError("tools are not supported by the scorebox gateway")
    messages: list[dict[str, str]] = []
    system = _pick(document, "systemInstruction", "system_instruction")
    if system is not None:
        messages.append({"role": "system", "content": _gemini_parts(system, "systemInstruction")})
    contents = document.get("contents")
    if not isinstance(contents, list) or not contents:
        raise GatewayRequestError("contents must be a non-empty list")
    for index, content in enumerate(contents):
        role = content.get("role", "user") if isinstance(content, dict) else None
        if role not in ("user", "model"):
            raise GatewayRequestError(f"contents[{index}]: role must be user or model")
        text = _gemini_parts(content, f"contents[{index}]")
        messages.append({"role": "assistant" if role == "model" else "user", "content": text})
    config = _pick(document, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise GatewayRequestError("generationConfig must be an object")
    if config.get("candidateCount") not in (None, 1):
        raise GatewayRequestError("candidateCount must be 1 through the scorebox gateway")
    response_format, expect = _gemini_expect(config, messages)
    return ChatRequest(
        Provider.GEMINI,
        tuple(messages),
        model=model,
        temperature=_number(config, "temperature"),
        max_tokens=_integer(config, "maxOutputTokens", "max_output_tokens"),
        response_format=response_format,
        expect=expect,
    )


def render_gemini(text: str, completion: Completion, served_by: str) -> dict[str, Any]:
    usage = completion.usage
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "MAX_TOKENS" if completion.finish_reason == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage.prompt_tokens,
            "candidatesTokenCount": usage.completion_tokens,
            "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
        },
        "modelVersion": served_by,
    }


# -- replies ----------------------------------------------------------------------


class ReplyMismatch(ScoreboxError):
    """The model's reply does not fit the schema the check asked for."""


def conform(expect: Expectation | None, text: str) -> str:
    """The text the check gets: for an enum, the bare value; for JSON, the checked JSON.

    Raises :class:`ReplyMismatch` when the reply fits no allowed value or is not the JSON asked
    for (the check then gets an error, never a silent wrong value).
    """
    if expect is None:
        return text
    stripped = text.strip()
    if expect.values is not None:
        candidate: Any = stripped
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "value" in parsed:
            candidate = parsed["value"]
        elif isinstance(parsed, str | int | float) and not isinstance(parsed, bool):
            candidate = parsed
        value = str(candidate).strip().strip('"')
        if value in expect.values:
            return value
        raise ReplyMismatch(
            f"the model answered {short(stripped)!r}, which is none of the allowed values "
            f"{list(expect.values)}"
        )
    try:
        parsed = json.loads(stripped)
    except ValueError as exc:
        raise ReplyMismatch(
            f"the model's reply is not the JSON asked for: {short(stripped)!r}"
        ) from exc
    if expect.schema:
        problem = schema_problem(expect.schema, parsed, "$")
        if problem:
            raise ReplyMismatch(f"the model's reply does not fit the schema: {problem}")
    return json.dumps(parsed, ensure_ascii=False)


def short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def schema_problem(schema: Mapping[str, Any], value: Any, where: str) -> str | None:
    """The first way ``value`` breaks ``schema`` (type, enum, required, properties, items)."""
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        ok = False
        for name in names:
            types = _JSON_TYPES.get(str(name))
            if types is None:
                ok = True
                break
            if isinstance(value, bool) and name in ("integer", "number"):
                continue
            if isinstance(value, types):
                ok = True
                break
        if not ok:
            return f"{where} is {type(value).__name__}, not {'/'.join(map(str, names))}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{where} is {value!r}, none of {enum}"
    if isinstance(value, dict):
        for name in schema.get("required") or []:
            if name not in value:
                return f"{where} lacks {name!r}"
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                if name in value and isinstance(sub, dict):
                    problem = schema_problem(sub, value[name], f"{where}.{name}")
                    if problem:
                        return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = schema_problem(schema["items"], item, f"{where}[{index}]")
            if problem:
                return problem
    return None


def render(
    request: ChatRequest,
    completion: Completion,
    text: str,
    served_by: str,
    created: int,
    request_id: int,
) -> dict[str, Any]:
    """The client's success body for ``completion`` (``text`` already :func:`conform`-ed)."""
    if request.provider is Provider.OPENAI:
        return render_openai(completion, served_by, created, request_id)
    if request.provider is Provider.COHERE_V1:
        return render_cohere_v1(request, completion, request_id)
    if request.provider is Provider.COHERE_V2:
        return render_cohere_v2(completion, request_id)
    return render_gemini(text, completion, served_by)


def render_error(provider: Provider | None, status: int, message: str) -> dict[str, Any]:
    """An error body each client SDK surfaces with ``message`` in its exception text."""
    if provider is Provider.GEMINI:
        return {"error": {"code": status, "message": message, "status": "FAILED_PRECONDITION"}}
    if provider in (Provider.COHERE_V1, Provider.COHERE_V2):
        return {"message": message}
    return {"error": {"message": message, "type": "scorebox_gateway", "code": status}}
