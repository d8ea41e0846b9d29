"""MkDocs hooks (mkdocs.yml ``hooks:``): the docs' generated parts, made at build time.

Each page keeps a marker where its generated part goes, so the part cannot drift from
the code it describes:

- ``<!-- generated:settings -->``: one table of every ``SCOREBOX_*`` variable, from
  :class:`engine.settings.Settings` (and :class:`engine.models.Limits`, whose fields are
  read from flat variables).
- ``<!-- generated:openapi -->``: the HTTP API reference, from the app's OpenAPI document
  (``create_app(...).openapi()``, offline: no server, no CDN).
- ``<!-- generated:bench FILE LEVEL -->``: a result file of ``bench/results/``, as
  ``python -m bench`` (or another bench module) last wrote it; its charts are copied in.

A session the tests run is fenced ```` ```sh runnable ```` (or ``python runnable``), which
GitHub renders as ``sh``; superfences takes no bare word after the language, so the hook
turns the marker into a class (```` ```{.sh .runnable} ````). Every built page is then
checked for what a fence that did not render leaves behind: a literal ```` ``` ```` in the
text, or a heading made of a comment line of a fenced block.

The CLI reference is mkdocs-click's ``::: mkdocs-click`` block over ``engine.cli:main``.
"""

from __future__ import annotations

import json
import re
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from engine.app import create_app
from engine.models import Limits
from engine.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
BENCH_RESULTS = ROOT / "bench" / "results"
#: bench/results files copied next to the benchmark pages (the charts they show)
BENCH_IMAGES = ("latest.png", "soak.png")

SETTINGS_MARKER = "<!-- generated:settings -->"
OPENAPI_MARKER = "<!-- generated:openapi -->"
BENCH_MARKER = re.compile(r"<!-- generated:bench (\S+) (\d) -->")
#: Readers have no issue tracker: "(issue #12)" and the like are dropped from included text.
ISSUE_REFERENCE = re.compile(
    r"\s*\((?:the )?(?:pre-)?(?:issue )?#\d+[^)]*\)|\s*\((?:the )?issue \d+\)"
)


# --- settings -------------------------------------------------------------------------------

#: What a setting does, for the fields whose ``Field(description=...)`` is still empty.
#: The model's own description wins; a name here that is no field fails the build, so
#: this list cannot outlive a renamed or removed setting.
MORE_DESCRIPTIONS = {
    "data_dir": "Where the SQLite database lives; default: the per-user data directory.",
    "pool_idle_seconds": "Recycle warm containers idle this long.",
    "max_parallel_jobs": "Sandbox jobs at once; default: the CPU count.",
    "job_retries": "Container deaths (or sandbox failures) in a row without a row scored "
    "before the rest of a batch is given up.",
    "row_timeout_seconds": "Per-row timer.",
    "memory_mb": "Memory of a sandbox container (= memory+swap: no swap).",
    "max_pids": "Processes and threads in a sandbox container.",
    "cpus": "CPU quota of a sandbox container.",
    "tmpfs_mb": "Size of `/tmp` (a `noexec` tmpfs).",
    "max_open_files": "`nofile` ulimit of a sandbox container.",
    "max_file_bytes": "`fsize` ulimit: the largest file a check may write.",
    "llm_base_url": "Any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp) for judges, "
    "the generator and the model gateway.",
    "llm_api_key": "Key of the LLM endpoint.",
    "llm_model": "Judge and generator model.",
    "llm_timeout_seconds": "Per LLM call.",
    "llm_max_retries": "Retries on 429, 5xx and timeouts.",
    "llm_concurrency": "LLM calls in flight per process.",
    "generator_temperature": "The generator's sampling temperature.",
    "generator_max_attempts": "Attempts (with feedback) before the generator gives up.",
    "quota_rows_per_run": "Per-tenant default: rows in one run.",
    "quota_source_bytes": "Per-tenant default: size of a check's source.",
}


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
        return " \\| ".join(names)
    if annotation is SecretStr:
        return "secret"
    if origin in (list, dict):
        return "JSON " + ("list" if origin is list else "object")
    if isinstance(annotation, type):
        return {"Path": "path", "str": "text", "bool": "bool"}.get(
            annotation.__name__, annotation.__name__
        )
    return str(annotation)


def _bounds(field: FieldInfo) -> str:
    parts = []
    for item in field.metadata:
        for attribute, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attribute, None)
            if value is not None:
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if value in ({}, []):
            return f"`{json.dumps(value)}`"
        return "computed (see description)"
    value = field.default
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _variables(name: str, field: FieldInfo) -> str:
    alias = field.validation_alias
    choices = getattr(alias, "choices", None)
    if choices:
        return " or ".join(f"`{choice}`" for choice in choices)
    return f"`SCOREBOX_{name.upper()}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def settings_rows() -> list[tuple[str, str, str, str]]:
    """(variables, type, default, description) for every setting, in the model's order."""
    known = set(Settings.model_fields) | set(Limits.model_fields)
    unknown = sorted(set(MORE_DESCRIPTIONS) - known)
    if unknown:
        raise ValueError(f"MORE_DESCRIPTIONS names no setting: {unknown}")
    rows = []
    for name, field in Settings.model_fields.items():
        if name == "limits":  # read from flat variables: SCOREBOX_ROW_TIMEOUT_SECONDS, ...
            for limit, limit_field in Limits.model_fields.items():
                rows.append(_settings_row(limit, limit_field))
            continue
        rows.append(_settings_row(name, field))
    return rows


def _settings_row(name: str, field: FieldInfo) -> tuple[str, str, str, str]:
    kind = _type_name(field.annotation)
    bounds = _bounds(field)
    return (
        _variables(name, field),
        f"{kind}, {bounds}" if bounds else kind,
        _default(field),
        _cell(field.description or MORE_DESCRIPTIONS.get(name, "")),
    )


def settings_table() -> str:
    lines = ["| variable | type | default | what |", "| --- | --- | --- | --- |"]
    lines += [f"| {v} | {t} | {d} | {w} |" for v, t, d, w in settings_rows()]
    return "\n".join(lines) + "\n"


# --- the HTTP API ---------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The app's OpenAPI document, as ``GET /openapi.json`` serves it (nothing is started)."""
    with tempfile.TemporaryDirectory() as data_dir:
        document: dict[str, Any] = create_app(Settings(data_dir=Path(data_dir))).openapi()
    return document


def _schema_anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_schema_anchor(name)})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_schema_type(part) for part in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_schema_type(schema['additionalProperties'])}"
    return str(kind or "any")


def openapi_markdown(document: dict[str, Any]) -> str:
    """Every operation grouped by tag, then every schema, as Markdown."""
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            tag = (operation.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append((method.upper(), path, operation))
    out = [f"Version {document['info']['version']} (OpenAPI {document['openapi']}).", ""]
    for tag, operations in sorted(by_tag.items()):
        out += [f"## {tag}", ""]
        for method, path, operation in operations:
            out += [f"### `{method} {path}`", ""]
            summary = operation.get("summary")
            if summary:
                out += [f"**{summary.strip()}**", ""]
            if operation.get("description"):
                out += [operation["description"].strip(), ""]
            parameters = operation.get("parameters", [])
            if parameters:
                out += [
                    "| parameter | in | required | type | what |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for p in parameters:
                    out.append(
                        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} "
                        f"| {_schema_type(p.get('schema', {}))} "
                        f"| {_cell(p.get('description', ''))} |"
                    )
                out.append("")
            body = operation.get("requestBody")
            if body:
                for content_type, content in body.get("content", {}).items():
                    schema = _schema_type(content.get("schema", {}))
                    out += [f"Request body (`{content_type}`): {schema}", ""]
            responses = operation.get("responses", {})
            if responses:
                out += ["| status | what |", "| --- | --- |"]
                for status, response in responses.items():
                    types_ = [
                        _schema_type(content["schema"])
                        for content in response.get("content", {}).values()
                        if "schema" in content
                    ]
                    what = _cell(response.get("description", ""))
                    if types_ and types_[0] != "any":
                        what += f": {types_[0]}"
                    out.append(f"| {status} | {what} |")
                out.append("")
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        out += ["## Schemas", ""]
        for name, schema in sorted(schemas.items()):
            out += [f"### {name} {{#{_schema_anchor(name)}}}", ""]
            if schema.get("description"):
                out += [schema["description"].strip(), ""]
            properties = schema.get("properties", {})
            if properties:
                required = set(schema.get("required", []))
                out += ["| field | type | required | what |", "| --- | --- | --- | --- |"]
                for field, spec in properties.items():
                    out.append(
                        f"| `{field}` | {_schema_type(spec)} "
                        f"| {'yes' if field in required else 'no'} "
                        f"| {_cell(spec.get('description', ''))} |"
                    )
                out.append("")
            elif "enum" in schema:
                out += [f"One of {_schema_type(schema)}.", ""]
    return "\n".join(out) + "\n"


# --- bench/results --------------------------------------------------------------------------


def bench_markdown(name: str, level: int) -> str:
    """A bench result file, its title at heading ``level``, without issue numbers."""
    text = (BENCH_RESULTS / name).read_text(encoding="utf-8")
    text = ISSUE_REFERENCE.sub("", text)
    lines = []
    for line in text.splitlines():
        lines.append("#" * (level - 1) + line if line.startswith("#") else line)
    return "\n".join(lines) + "\n"


# --- fenced blocks -------------------------------------------------------------------------

#: ```sh runnable / ```python runnable: a session the doc-session tests run.
RUNNABLE_FENCE = re.compile(r"^([ \t]*)```(\w+) runnable[ \t]*$", re.MULTILINE)
#: What a page keeps of its source for the check of its built HTML: its fences' comment lines.
_FENCE_COMMENTS: dict[str, set[str]] = {}
_PRE_OR_CODE = re.compile(r"<pre\b.*?</pre>|<code\b.*?</code>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1>", re.DOTALL)


def runnable_fences(markdown: str) -> str:
    """```sh runnable becomes ```{.sh .runnable}: highlighted as sh, marked runnable."""
    return RUNNABLE_FENCE.sub(r"\1```{.\2 .runnable}", markdown)


def fence_comments(markdown: str) -> set[str]:
    """The text of every ``#`` comment line inside a fenced block of ``markdown``."""
    comments: set[str] = set()
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None:
            match = re.match(r"(`{3,}|~{3,})", stripped)
            if match:
                fence = match.group(1)
        elif stripped.startswith(fence) and stripped.strip(fence[0]) == "":
            fence = None
        elif stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            if text:
                comments.add(text)
    return comments


def unrendered_fences(html: str, comments: set[str]) -> list[str]:
    """What in a built page shows a fenced block left as text; empty when none did."""
    problems = []
    text = _TAG.sub("", _PRE_OR_CODE.sub("", html))
    for line in text.splitlines():
        if "```" in line:
            problems.append(f"a literal code fence: {line.strip()[:80]!r}")
    for _level, inner in _HEADING.findall(html):
        heading = _TAG.sub("", inner).replace("&para;", "").replace("\u00b6", "").strip()
        if heading in comments:
            problems.append(f"a heading made of a comment line of a fenced block: {heading!r}")
    return problems


# --- the hooks ------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    for image in BENCH_IMAGES:
        source = BENCH_RESULTS / image
        if source.exists():
            files.append(File.generated(config, f"benchmarks/{image}", abs_src_path=str(source)))
    return files


#: click 8.2+ marks "no default" with a sentinel, which mkdocs-click prints as it is.
CLICK_NO_DEFAULT = "<td><code>Sentinel.UNSET</code></td>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    problems = unrendered_fences(html, _FENCE_COMMENTS.pop(page.file.src_uri, set()))
    if problems:
        raise PluginError(
            f"{page.file.src_uri}: a fenced block did not render ("
            + "; ".join(problems)
            + "): write the fence as ```lang, ```{.lang .class} or ```lang runnable"
        )
    return html.replace(CLICK_NO_DEFAULT, "<td>-</td>")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    _FENCE_COMMENTS[page.file.src_uri] = fence_comments(markdown)
    markdown = runnable_fences(markdown)
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_table())
    if OPENAPI_MARKER in markdown:
        markdown = markdown.replace(OPENAPI_MARKER, openapi_markdown(openapi_document()))
    return BENCH_MARKER.sub(
        lambda match: bench_markdown(match.group(1), int(match.group(2))), markdown
    )
