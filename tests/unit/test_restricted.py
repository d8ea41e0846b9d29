"""The restricted policy on the host: ordinary checks behave as under plain exec; hostile ones stop.

Each check is loaded the way the harness loads it (``exec_restricted`` or a plain
``exec``, then ``contract.resolve_entrypoint``), run on rows with
``contract.bind_arguments`` and scored with ``contract.coerce_score``.
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from engine import checks, contract
from engine.contract.restricted import (
    CHECK_MODULE,
    RestrictedCompileError,
    compile_restricted_check,
    exec_restricted,
    restricted_globals,
    restricted_problems,
)
from engine.validation import validate
from tests.unit import test_validation as published


@pytest.fixture(autouse=True)
def sandbox_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """``okareo.checks`` as the sandbox image provides it (scorebox's own base classes), and
    a ``sys.modules`` slot for the check module that is removed after each test."""
    package = types.ModuleType("okareo")
    package.checks = checks  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "okareo", package)
    monkeypatch.setitem(sys.modules, "okareo.checks", checks)
    monkeypatch.setitem(sys.modules, CHECK_MODULE, types.ModuleType(CHECK_MODULE))


def _plain(source: str) -> dict[str, Any]:
    """What the harness does for a standard check (plus the typing prelude)."""
    module = types.ModuleType(CHECK_MODULE)
    sys.modules[CHECK_MODULE] = module
    module.__dict__.update(contract.check_prelude())
    exec(compile(source, "<check>", "exec", dont_inherit=True), module.__dict__)
    return module.__dict__


def _run(namespace: dict[str, Any], rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    func, signature = contract.resolve_entrypoint(namespace)
    results: list[tuple[Any, ...]] = []
    for row in rows:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            value = func(**contract.bind_arguments(signature.bound, row))
        score = contract.coerce_score(value)
        results.append((score.score, score.output_type, score.explanation, out.getvalue()))
    return results


ROWS: list[dict[str, Any]] = [
    {"model_output": "The quick brown fox jumps over the lazy dog again and again today."},
    {
        "model_output": "print('hi')",
        "scenario_input": "a short input",
        "scenario_result": "print('hi')",
        "metadata": {"max_words": 3, "tool_calls": []},
        "model_input": "say hi",
    },
    {
        "model_output": '{"tool_calls": [{"parameters": {"a": 1}}]}',
        "scenario_input": "x y z",
        "scenario_result": '{"parameter_definitions": {"a": {"required": true}}}',
        "metadata": {},
    },
]

ORDINARY = """\
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from okareo.checks import CodeBasedCheck, CheckResponse

WORD = re.compile(r"[a-z']+")


@dataclass
class Stats:
    words: int
    unique: int


class Scorer:
    def __init__(self, weight=2.0):
        self.weight = weight
        self.seen = []

    def tokens(self, text):
        found = WORD.findall(text.lower())
        self.seen.append(len(found))
        return found

    def score(self, tokens):
        total = 0
        for i, (a, b) in enumerate(zip(tokens, tokens[1:])):
            total += len(a) * self.weight if a != b else 0
        return total


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, metadata: dict) -> CheckResponse:
        scorer = Scorer()
        tokens = scorer.tokens(model_output)
        counts = Counter(tokens)
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        lengths = {w: len(w) for w in tokens}
        vowels = sum(1 for w in tokens for c in w if c in "aeiou")
        stats = Stats(words=len(tokens), unique=len(set(tokens)))
        limit = metadata.get("max_words", 50)
        first, *rest = tokens or [""]
        label = "{} words, first {!r}".format(stats.words, first)
        print(f"top={top} vowels={vowels}")
        value = math.log1p(scorer.score(tokens)) + len(lengths) / max(len(rest), 1)
        try:
            json.loads(model_output)
            value += 1
        except ValueError:
            pass
        return CheckResponse(
            score=round(value, 6) if stats.words <= limit else 0.0,
            explanation=label + " " + json.dumps({"unique": stats.unique, "seen": scorer.seen}),
        )
"""

RUNNABLE = [
    pytest.param(published.OKAREO_DOCS_WORD_COUNT, id="okareo-docs-word-count"),
    pytest.param(published.OKAREO_DOCS_EXACT_MATCH, id="okareo-docs-check-response"),
    pytest.param(published.OKAREO_SDK_SAMPLE, id="okareo-sdk-sample"),
    pytest.param(published.OKAREO_SDK_WITH_EXPLANATION, id="okareo-sdk-explanation"),
    pytest.param(published.OKAREO_SDK_METADATA, id="okareo-sdk-metadata"),
    pytest.param(published.OKAREO_COOKBOOK_CHARACTER_COUNT, id="okareo-cookbook-character-count"),
    pytest.param(published.OKAREO_COOKBOOK_REQUIRED_PARAMS, id="okareo-cookbook-json-print"),
    pytest.param(published.COMPRESSION_RATIO, id="compression-ratio"),
    pytest.param(published.LEVENSHTEIN_WITH_HELPER, id="levenshtein-helper-function"),
    pytest.param(published.LEVENSHTEIN_INPUT_STATIC_HELPER, id="levenshtein-static-helper"),
    pytest.param(published.CONTAINS_ALL_IMPORTS, id="contains-all-imports"),
    pytest.param(published.TUPLE_RETURN_UNANNOTATED, id="tuple-return"),
    pytest.param(published.TUPLE_RETURN_ANNOTATED, id="tuple-return-annotated"),
    pytest.param(published.CHECK_RESPONSE_WITH_METADATA, id="check-response-metadata"),
    pytest.param(published.DESIGN_FUNCTION, id="design-function"),
    pytest.param(ORDINARY, id="ordinary-classes-helpers-comprehensions"),
]


@pytest.mark.parametrize("source", RUNNABLE)
def test_ordinary_checks_give_identical_results(source: str) -> None:
    assert validate(source, "restricted").valid
    rows = [row for row in ROWS if _accepts(source, row)]
    assert rows
    plain = _run(_plain(source), rows)
    guarded = _run(exec_restricted(source), rows)
    assert guarded == plain


def _accepts(source: str, row: dict[str, Any]) -> bool:
    _, signature = contract.resolve_entrypoint(_plain(source))
    return not contract.missing_inputs(signature.bound, row)


def test_print_reaches_the_current_stdout() -> None:
    namespace = exec_restricted("def evaluate(model_output):\n    print('saw', model_output)\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        namespace["evaluate"]("x")
    assert out.getvalue() == "saw x\n"


def test_str_format_works_but_fields_are_guarded() -> None:
    namespace = exec_restricted(
        "def ok(x):\n    return '{0} {k}'.format(x, k=[1]) + '{n}'.format_map({'n': 2})\n"
        "def bad(x):\n    return '{0.__class__}'.format(x)\n"
    )
    assert namespace["ok"]("a") == "a [1]2"
    with pytest.raises(AttributeError, match="__class__"):
        namespace["bad"]("a")


@contextlib.contextmanager
def _raises_at_load_or_call(exc: type[BaseException], match: str) -> Iterator[None]:
    with pytest.raises(exc, match=match):
        yield


# (source, exception at load or call, message fragment, validation code or None if only dynamic)
HOSTILE = [
    pytest.param(
        "def evaluate(model_output):\n    return ().__class__.__base__.__subclasses__()\n",
        RestrictedCompileError,
        "__class__",
        "private-attribute",
        id="subclasses-walk",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return evaluate.__globals__['__builtins__']\n",
        RestrictedCompileError,
        "__globals__",
        "private-attribute",
        id="globals",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return __builtins__\n",
        RestrictedCompileError,
        "__builtins__",
        "private-name",
        id="builtins",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return __import__('os').system('id')\n",
        RestrictedCompileError,
        "__import__",
        "private-name",
        id="dunder-import",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return eval('1 + 1')\n",
        RestrictedCompileError,
        "Eval calls",
        "forbidden-builtin",
        id="eval",
    ),
    pytest.param(
        "def evaluate(model_output):\n    exec('x = 1')\n    return 1\n",
        RestrictedCompileError,
        "Exec calls",
        "forbidden-builtin",
        id="exec",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return open('/etc/passwd').read()\n",
        NameError,
        "open",
        "forbidden-builtin",
        id="open",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return compile('1', 'x', 'eval')\n",
        NameError,
        "compile",
        "forbidden-builtin",
        id="compile",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return globals()\n",
        NameError,
        "globals",
        "forbidden-builtin",
        id="globals-call",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return vars(model_output)\n",
        NameError,
        "vars",
        "forbidden-builtin",
        id="vars",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return getattr(evaluate, '__globals__')\n",
        AttributeError,
        "__globals__",
        "private-attribute",
        id="getattr-dunder",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return getattr(model_output, '__cl' + 'ass__')\n",
        AttributeError,
        "__class__",
        None,
        id="getattr-computed-dunder",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return hasattr(model_output, '__class__')\n",
        None,
        "",
        "private-attribute",
        id="hasattr-dunder-is-false",
    ),
    pytest.param(
        "def evaluate(model_output):\n    g = (x for x in [1])\n    return g.gi_frame\n",
        RestrictedCompileError,
        "gi_frame",
        "private-attribute",
        id="generator-frame",
    ),
    pytest.param(
        "import os\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "'os' is not allowed",
        "import-not-allowed",
        id="import-os",
    ),
    pytest.param(
        "def evaluate(model_output):\n    import subprocess\n    return subprocess.run(['id'])\n",
        ImportError,
        "'subprocess' is not allowed",
        "import-not-allowed",
        id="import-subprocess",
    ),
    pytest.param(
        "import socket\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "'socket' is not allowed",
        "import-not-allowed",
        id="import-socket",
    ),
    pytest.param(
        "from os import system\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "'os' is not allowed",
        "import-not-allowed",
        id="from-os-import",
    ),
    pytest.param(
        "import importlib\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "'importlib' is not allowed",
        "import-not-allowed",
        id="import-importlib",
    ),
    pytest.param(
        "import typing\ndef evaluate(model_output):\n    return typing.sys.modules['os']\n",
        AttributeError,
        "module 'sys' is not available",
        None,
        id="module-through-attribute",
    ),
    pytest.param(
        "import json\ndef evaluate(model_output):\n    json.loads = None\n    return 1\n",
        TypeError,
        "cannot change a module",
        None,
        id="monkeypatch-module",
    ),
    pytest.param(
        "import json\ndef evaluate(model_output):\n    setattr(json, 'x', 1)\n    return 1\n",
        TypeError,
        "cannot change a module",
        None,
        id="setattr-module",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return type('X', (), {})\n",
        TypeError,
        "one argument",
        None,
        id="type-three-arguments",
    ),
    pytest.param(
        "def evaluate(model_output):\n    return '{0.__class__.__mro__}'.format(model_output)\n",
        AttributeError,
        "__class__",
        None,
        id="format-dunder-field",
    ),
    pytest.param(
        "import operator\ndef evaluate(model_output):\n"
        "    return operator.attrgetter('__class__.__base__')(model_output)\n",
        AttributeError,
        "operator.attrgetter is not available",
        "forbidden-attribute",
        id="attrgetter-dunder",
    ),
    pytest.param(
        "from operator import methodcaller\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "without the guards",
        "forbidden-attribute",
        id="methodcaller",
    ),
    pytest.param(
        "import functools\n@functools.singledispatch\ndef f(x):\n    return 1\n"
        "def evaluate(model_output):\n    return 1\n",
        AttributeError,
        "functools.singledispatch is not available",
        "forbidden-attribute",
        id="singledispatch-evaluates-annotations",
    ),
    pytest.param(
        "import typing\ndef g(x: '().__class__'):\n    return x\n"
        "def evaluate(model_output):\n    return typing.get_type_hints(g)\n",
        AttributeError,
        "typing.get_type_hints is not available",
        "forbidden-attribute",
        id="get-type-hints-evaluates-strings",
    ),
    pytest.param(
        "from . import sibling\ndef evaluate(model_output):\n    return 1\n",
        ImportError,
        "relative imports",
        "relative-import",
        id="relative-import",
    ),
]


@pytest.mark.parametrize(("source", "exc", "match", "code"), HOSTILE)
def test_hostile_checks_are_stopped(
    source: str, exc: type[BaseException] | None, match: str, code: str | None
) -> None:
    report = validate(source, "restricted")
    if code is not None:
        assert code in [i.code for i in report.errors], [i.model_dump() for i in report.issues]
    if exc is None:
        assert _run(exec_restricted(source), [ROWS[0]])[0][0] is False
        return
    with pytest.raises(exc, match=match):
        namespace = exec_restricted(source)
        func, signature = contract.resolve_entrypoint(namespace)
        func(**contract.bind_arguments(signature.bound, ROWS[0]))


def test_compile_error_carries_positions() -> None:
    source = "def evaluate(model_output):\n    x = model_output.__class__\n    return eval(x)\n"
    with pytest.raises(RestrictedCompileError) as info:
        compile_restricted_check(source)
    problems = info.value.problems
    assert [(p.code, p.line, p.col) for p in problems] == [
        ("private-attribute", 2, 22),
        ("forbidden-builtin", 3, 12),
    ]
    assert "line 2, col 22" in str(info.value)
    assert isinstance(info.value, SyntaxError)


def test_syntax_errors_are_problems_too() -> None:
    (problem,) = restricted_problems("def evaluate(:\n")
    assert problem.code == "syntax-error"
    assert problem.line == 1


def test_compiles_to_a_code_object() -> None:
    code = compile_restricted_check(published.DESIGN_FUNCTION, "<check>")
    assert code.co_filename == "<check>"


def test_globals_hold_no_dangerous_builtins() -> None:
    names = restricted_globals()["__builtins__"]
    for name in ("open", "eval", "exec", "compile", "globals", "vars", "dir", "input"):
        assert name not in names
    for name in contract.RESTRICTED_EXTRA_BUILTINS:
        assert name in names
    assert names["__import__"] is not __import__


def test_guarded_import_admits_the_allowlist_and_check_modules() -> None:
    importer = restricted_globals()["__builtins__"]["__import__"]
    assert importer("json").__name__ == "json"
    assert importer("okareo.checks", fromlist=("CodeBasedCheck",)) is checks
    assert importer("okareo", fromlist=("checks",)).checks is checks
    assert importer("engine.checks").checks is checks
    with pytest.raises(ImportError):
        importer("engine", fromlist=("contract",))
    with pytest.raises(ImportError):
        importer("collections", fromlist=("_sys",))


def test_annotated_assignments_are_allowed_and_guarded() -> None:
    namespace = exec_restricted("limit: int = 3\ndef evaluate(model_output):\n    n: int = 2\n"
                                "    return n + limit\n")  # fmt: skip
    assert namespace["evaluate"]("x") == 5
    with pytest.raises(RestrictedCompileError, match="_hidden"):
        exec_restricted("_hidden: int = 1\n")


def test_own_objects_are_writable_foreign_ones_are_not() -> None:
    namespace = exec_restricted(
        "class Box:\n    pass\n"
        "def fill():\n    b = Box()\n    b.x = 1\n    setattr(b, 'y', 2)\n    Box.z = 3\n"
        "    d = {}\n    d['k'] = [0]\n    d['k'][0] = b.x + b.y + Box.z\n    return d\n"
        "def spoil(x):\n    x.real = 1\n"
    )
    assert namespace["fill"]() == {"k": [6]}
    with pytest.raises(TypeError, match="cannot change a int"):
        namespace["spoil"](1)


def test_denied_attributes_of_allowlisted_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    yaml = types.ModuleType("yaml")
    yaml.safe_load = lambda text: {"safe": text}  # type: ignore[attr-defined]
    yaml.load = lambda text, Loader=None: {"unsafe": text}  # type: ignore[attr-defined]  # noqa: N803
    yaml.Loader = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "yaml", yaml)
    namespace = exec_restricted(
        "import yaml\n"
        "def safe(text):\n    return yaml.safe_load(text)\n"
        "def unsafe(text):\n    return yaml.load(text, Loader=yaml.Loader)\n"
    )
    assert namespace["safe"]("a") == {"safe": "a"}
    with pytest.raises(AttributeError, match=r"yaml\.load is not available.*safe_load"):
        namespace["unsafe"]("a")
    with pytest.raises(ImportError, match="arbitrary Python objects"):
        exec_restricted("from yaml import Loader\n")
    with pytest.raises(ImportError, match="arbitrary Python objects"):
        exec_restricted("import yaml.constructor\n")
