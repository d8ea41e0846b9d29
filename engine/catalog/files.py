"""The kind of a pushed file: code or a model check's prompt template.

``scorebox check push FILE`` and ``POST /v1/checks/upload`` decide alike, from the file's
name and, for other names, its content (:func:`kind_of_file`).
"""

from __future__ import annotations

import ast
from pathlib import PurePath
from typing import Literal

CheckKind = Literal["code", "model"]

#: File extensions of a model check's prompt template.
TEMPLATE_SUFFIXES: tuple[str, ...] = (".txt", ".md", ".prompt", ".tmpl")


def kind_of_file(filename: str, text: str) -> CheckKind:
    """The kind of check a file named ``filename`` holding ``text`` is.

    ``scorebox check push FILE`` and ``POST /v1/checks/upload`` decide alike: ``.py`` is
    a code check; ``.txt``, ``.md``, ``.prompt`` and ``.tmpl`` are a model check's prompt
    template; any other file is a code check when it parses as Python and defines
    ``evaluate`` or ``class Check`` at module level, and a prompt template otherwise. An
    explicit ``kind`` (``--kind``, the form's ``kind`` field) overrides the rule.
    """
    suffix = PurePath(filename).suffix.lower()
    if suffix == ".py":
        return "code"
    if suffix in TEMPLATE_SUFFIXES:
        return "model"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return "model"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "evaluate":
            return "code"
        if isinstance(node, ast.ClassDef) and node.name == "Check":
            return "code"
    return "model"
