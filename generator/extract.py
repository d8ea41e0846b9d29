"""Pulling the check's code (or a prompt template) out of an LLM reply. Pure.

Replies come in many shapes: one fenced block, several (a helper, the check,
a usage example), a block followed by "here is a corrected version" and
another, bare code with prose around it, a reasoning model's ``<think>``
section. :func:`extract_code` returns the source to validate, or None.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from engine.contract import ENTRYPOINT_CLASS, ENTRYPOINT_FUNCTION

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n"
    r"(?P<body>.*?)(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_PYTHON_LANGS = frozenset({"", "python", "py", "python3", "py3"})
_CODE_START = re.compile(r"^(import |from \S+ import |def |class |@|async def )")
_ENTRYPOINT = re.compile(
    rf"^(?:def\s+{ENTRYPOINT_FUNCTION}\s*\(|class\s+{ENTRYPOINT_CLASS}\b)", re.MULTILINE
)
#: Top-level statements a helper block may hold (anything else is a usage example).
_DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block of a reply."""

    lang: str
    body: str


def strip_thinking(text: str) -> str:
    """The reply without ``<think>...</think>`` sections of reasoning models."""
    return _THINK.sub("", text)


def fenced_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block (backticks or tildes), in order; an unclosed last one runs to the end."""
    return [
        CodeBlock(m.group("lang").lower(), m.group("body").rstrip() + "\n")
        for m in _FENCE.finditer(text)
    ]


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _defines_entrypoint(source: str) -> bool:
    return _ENTRYPOINT.search(source) is not None


def _is_main_guard(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def strip_main_guard(source: str) -> str:
    """Drop top-level ``if __name__ == "__main__":`` blocks (demo code the sandbox never runs)."""
    tree = _parse(source)
    if tree is None:
        return source
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        if _is_main_guard(node) and node.end_lineno is not None:
            del lines[node.lineno - 1 : node.end_lineno]
    return "".join(lines).rstrip() + "\n"


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _join_blocks(blocks: list[str]) -> str:
    """The last block defining the entrypoint, preceded by helper blocks it needs."""
    entry_index = max(i for i, b in enumerate(blocks) if _defines_entrypoint(b))
    entry = blocks[entry_index]
    entry_tree = _parse(entry)
    if entry_tree is None:
        return entry
    missing = _used_names(entry_tree) - _defined_names(entry_tree)
    helpers: list[str] = []
    for block in blocks:
        if block is entry or _defines_entrypoint(block):
            continue
        tree = _parse(block)
        if tree is None or not all(isinstance(s, _DEFINITIONS) for s in tree.body):
            continue  # usage examples, shell commands, output
        if _defined_names(tree) & missing:
            helpers.append(block)
    return "\n\n".join(b.rstrip() for b in [*helpers, entry]) + "\n"


def _bare_code(text: str) -> str | None:
    """The longest parseable stretch starting at the first line that looks like code."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)]
    if not starts:
        return None
    start = starts[0]
    for end in range(len(lines), start, -1):
        candidate = "\n".join(lines[start:end]).strip()
        if candidate and _parse(candidate) is not None:
            return candidate + "\n"
    return None


def extract_code(reply: str) -> str | None:
    """The Python source in an LLM reply, or None when there is none.

    Fenced Python blocks win over bare code. With several blocks, the last one
    defining the entrypoint is taken, preceded by helper blocks (imports and
    definitions only) whose names it uses; usage examples are dropped, and so
    is a ``__main__`` guard.
    """
    text = strip_thinking(reply)
    blocks = [b.body for b in fenced_blocks(text) if b.lang in _PYTHON_LANGS and b.body.strip()]
    if blocks:
        if any(_defines_entrypoint(b) for b in blocks):
            return strip_main_guard(_join_blocks(blocks))
        parseable = [b for b in blocks if _parse(b) is not None]
        return strip_main_guard("\n\n".join(b.rstrip() for b in parseable or blocks) + "\n")
    if _parse(text) is not None and _defines_entrypoint(text):
        return strip_main_guard(text.strip() + "\n")
    code = _bare_code(text)
    return strip_main_guard(code) if code is not None else None


def extract_template(reply: str) -> str | None:
    """A model check's prompt template: the first fenced block of any language, else the reply."""
    text = strip_thinking(reply).strip()
    blocks = [b.body for b in fenced_blocks(text) if b.body.strip()]
    if blocks:
        return blocks[0].strip()
    return text or None
