"""Suite files (``scorebox.yaml``): what ``scorebox run`` scores when no ``--check`` is given.

A suite names the data, the column mapping, the checks (with params and
thresholds), the gates, the labels and the outputs of a run, so CI runs one
command. :class:`Suite` is the contract; ``docs/scorebox.schema.json`` is its
JSON Schema (``python -m engine.suites.file`` prints it). :func:`load_suite` reads a
file and raises :class:`SuiteError` whose message names the file, the line,
the key path and what to fix. Relative paths in a suite are relative to the
suite file's directory.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
)

from engine.contract import Status
from engine.errors import InvalidRequestError
from engine.names import BUILTIN_PREFIX, DEFAULT_FAIL_ON, SUITE_FILE, split_entry

OUTPUT_PATTERN = r"\.(jsonl|ndjson|csv|tsv|html|htm)$"
RowField = Literal[
    "id",
    "model_output",
    "scenario_input",
    "scenario_result",
    "model_input",
    "metadata",
    "messages",
    "item",
    "sample",
    "vars",
    "ground_truth",
    "output",
]


class SuiteError(InvalidRequestError):
    """Raised when a suite file cannot be read, is not YAML, or does not fit :class:`Suite`."""


class CheckEntry(BaseModel):
    """One check of a suite, with its parameters and threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        min_length=1,
        description="A .py check file (relative to the suite file), a built-in name "
        "(`scorebox judge builtins`), builtin:NAME (always the built-in), or the name of a "
        "check pushed to the server.",
    )
    version: int | None = Field(
        default=None,
        ge=1,
        description="Server runs only: pin this version of a pushed check (default: latest).",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Parameters of a parameterised built-in, e.g. {pattern: Paris} for "
        "regex_match (`scorebox judge builtins --json` lists each built-in's parameters).",
    )
    config: dict[str, Any] | None = Field(
        default=None,
        description="A code check's configuration (JSON): promptfoo's context['config'], "
        "the keyword parameters of reward-kit and Braintrust scorers. Part of the check "
        "version's identity when pushed.",
    )
    threshold: float | None = Field(
        default=None,
        description="Fail the run (exit 3) when this check's value is below this number: the "
        "pass rate (0 to 1) of a bool check, the mean score of a numeric one (rows that scored "
        "ok).",
    )


def _check_kind(value: Any) -> str:
    return "name" if isinstance(value, str) else "entry"


CheckItem = Annotated[
    Annotated[str, Field(min_length=1), Tag("name")] | Annotated[CheckEntry, Tag("entry")],
    Discriminator(_check_kind),
]
_UNION_TAGS = frozenset({"name", "entry"})


def _under_suite(name: str) -> str:
    """An ``output:`` path must stay in the suite's directory (a CLI ``-o`` may name any)."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or PureWindowsPath(name).drive or ".." in path.parts:
        raise ValueError(
            f"{name!r} leaves the suite's directory: name a file under it (e.g. "
            f"results/{path.name}), or pass the path with -o/--output"
        )
    return name


def _output_path(base: Path, name: str) -> Path:
    """``base / name``, refused if a symlink on the way leads out of ``base``."""
    out = base / name
    if not out.resolve().is_relative_to(base.resolve()):
        raise SuiteError(
            f"output {name!r} resolves to {out.resolve()}, outside the suite's directory "
            f"{base.resolve()} (a symlink?): name a file under it, or pass -o/--output"
        )
    return out


OutputPath = Annotated[str, Field(pattern=OUTPUT_PATTERN), AfterValidator(_under_suite)]


def _requirement(text: str) -> str:
    """A ``min_agreement:`` entry parses as ``--min-agreement`` does (or is ``required``)."""
    if text == "required":
        return text
    from engine.calibration.gate import parse_requirement  # noqa: PLC0415 (lazy: numpy)

    try:
        return str(parse_requirement(text))
    except InvalidRequestError as exc:
        raise ValueError(str(exc)) from None


AgreementRequirement = Annotated[str, Field(min_length=1), AfterValidator(_requirement)]


class Suite(BaseModel):
    """A ``scorebox.yaml`` suite: data, mapping, checks, gates, labels and outputs of a run."""

    model_config = ConfigDict(
        extra="forbid",
        title="scorebox suite (scorebox.yaml)",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    version: Literal[1] = Field(default=1, description="The suite format's version: 1.")
    data: str | None = Field(
        default=None,
        min_length=1,
        description="The rows to score: a .jsonl, .json, .csv, .tsv or .parquet file, relative "
        "to the suite file (`--data` overrides it).",
    )
    map: dict[RowField, str] = Field(
        default_factory=dict,
        description="Row field -> column of the data file, e.g. {model_output: answer} "
        "(`--map FIELD=COLUMN` overrides a field).",
    )
    checks: list[CheckItem] = Field(
        min_length=1,
        description="The checks to run: each a name (a .py file, a built-in, builtin:NAME, a "
        "pushed check) or an object {name, params, threshold, version} (`--check` replaces "
        "the list).",
    )
    fail_on: list[Status] = Field(
        default=[Status(s) for s in DEFAULT_FAIL_ON],
        description="Fail the run (exit 3) when any row has one of these statuses, or a check "
        "has no row that scored ok; [] for neither (`--fail-on` overrides it).",
    )
    max_failures: int | None = Field(
        default=None,
        ge=0,
        description="Allow up to this many failing rows (false, or a fail_on status) instead "
        "of failing on any (`--max-failures` overrides it).",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Run labels, e.g. {branch: main} (`--label KEY=VALUE` adds or replaces one).",
    )
    output: list[OutputPath] = Field(
        default_factory=list,
        description="Files to write every row x check result to, relative to the suite file: "
        ".jsonl, .csv, .tsv, or .html (a one-file report); `-o` replaces the list.",
    )
    min_agreement: list[AgreementRequirement] = Field(
        default_factory=list,
        description="Refuse the run's checks unless they agree with human labels, judged on "
        "each interval's lower bound: LABELS:FIGURE=MIN[,FIGURE=MIN], e.g. helpful:kappa=0.6 "
        "or helpful:tpr=0.8,tnr=0.8, or `required` (the agreement the server requires of each "
        "check version). Exit 3 below it, 2 with too few labels; needs a server "
        "(`--min-agreement` adds to the list).",
    )


@dataclass(frozen=True)
class SuitePlan:
    """A loaded suite with paths resolved against its directory."""

    path: Path
    suite: Suite
    data: Path | None
    checks: tuple[str | dict[str, Any], ...]
    thresholds: dict[str, float]
    outputs: tuple[Path, ...]


def threshold_key(name: str) -> str:
    """The name a check's results carry: a file's stem, a built-in without ``builtin:``."""
    bare = name.removeprefix(BUILTIN_PREFIX)
    file, entry = split_entry(bare)
    if file.endswith(".py") and bare == name:
        return Path(file).stem if entry is None else f"{Path(file).stem}:{entry}"
    return bare


def _resolve(base: Path, name: str) -> str:
    file, entry = split_entry(name)
    if file.endswith(".py") and not name.startswith(BUILTIN_PREFIX):
        resolved = str(base / file) if not Path(file).is_absolute() else file
        return resolved if entry is None else f"{resolved}:{entry}"
    return name


def plan_suite(path: Path, suite: Suite) -> SuitePlan:
    """Resolve a suite's relative paths against ``path``'s directory."""
    base = path.parent
    checks: list[str | dict[str, Any]] = []
    thresholds: dict[str, float] = {}
    for item in suite.checks:
        if isinstance(item, str):
            checks.append(_resolve(base, item))
            continue
        ref: dict[str, Any] = {"name": _resolve(base, item.name)}
        if item.version is not None:
            ref["version"] = item.version
        if item.params:
            ref["params"] = dict(item.params)
        if item.config is not None:
            ref["config"] = dict(item.config)
        checks.append(ref if len(ref) > 1 else ref["name"])
        if item.threshold is not None:
            thresholds[threshold_key(item.name)] = item.threshold
    return SuitePlan(
        path=path,
        suite=suite,
        data=None if suite.data is None else base / suite.data,
        checks=tuple(checks),
        thresholds=thresholds,
        outputs=tuple(_output_path(base, o) for o in suite.output),
    )


def load_suite(path: Path) -> SuitePlan:
    """Read, validate and resolve a suite file; :class:`SuiteError` says what to fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text: {exc}") from exc
    return plan_suite(path, parse_suite(text, str(path)))


def parse_suite(text: str, where: str = SUITE_FILE) -> Suite:
    """Validate a suite's YAML text (pure); ``where`` names the file in messages."""
    import yaml  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(f"{where}{at}: not valid YAML: {problem}") from exc
    if data is None:
        raise SuiteError(
            f"{where}: the file is empty; it needs at least `checks:` (`scorebox init` writes "
            "a commented example)"
        )
    if not isinstance(data, dict):
        raise SuiteError(
            f"{where}: expected a mapping of keys (data, checks, ...) at the top, "
            f"got a {type(data).__name__}"
        )
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        lines = [_problem(where, root, error) for error in exc.errors()]
        count = f"{len(lines)} problems" if len(lines) > 1 else "1 problem"
        raise SuiteError(f"{where}: {count}:\n" + "\n".join(f"  {line}" for line in lines)) from exc


def _key_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _line(root: Any, loc: Sequence[int | str]) -> int | None:
    """The 1-based line of the deepest node of ``loc`` that exists in the YAML tree."""
    node = root
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        children = getattr(node, "value", None)
        found = None
        if isinstance(part, int) and isinstance(children, list) and part < len(children):
            found = children[part]
        elif isinstance(part, str) and isinstance(children, list):
            for key, value in children:
                if isinstance(key, tuple | list) or getattr(key, "value", None) != part:
                    continue
                found = value if hasattr(value, "start_mark") else key
                break
            if found is None:
                return line
        if found is None or not hasattr(found, "start_mark"):
            return line
        node, line = found, found.start_mark.line + 1
    return line


def _description(loc: Sequence[int | str]) -> str | None:
    model: type[BaseModel] | None = Suite
    description = None
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        if field is None:
            return description
        description = field.description
        model = CheckEntry if model is Suite and part == "checks" else None
    return description


def _problem(where: str, root: Any, error: Mapping[str, Any]) -> str:
    raw = tuple(error["loc"])
    # drop the tags of the check-item union (checks[1].entry.params -> checks[1].params)
    loc = tuple(
        p
        for i, p in enumerate(raw)
        if not (p in _UNION_TAGS and i > 0 and isinstance(raw[i - 1], int) and raw[0] == "checks")
    )
    kind = error["type"]
    message = str(error["msg"])
    custom = True
    if loc[-1:] == ("[key]",):  # a bad key of a mapping (map: {nope: x})
        loc = loc[:-1]
        message = f"{loc[-1]!r} is not a row field: use one of {', '.join(get_args(RowField))}"
    elif len(loc) == 2 and loc[0] == "checks" and kind in ("model_type", "dict_type"):
        message = "a check is a name, or a mapping {name, params, threshold, version}"
    else:
        custom = False
    line = _line(root, loc)
    at = f"{where}:{line}" if line is not None else where
    if kind == "extra_forbidden":
        key = str(loc[-1])
        parent = loc[:-1]
        model: type[BaseModel] = CheckEntry if parent[:1] == ("checks",) else Suite
        known = list(model.model_fields)
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"{at}: {_key_path(loc)}: unknown key; {hint}known keys: {', '.join(known)}"
    if kind == "enum" and loc[:1] == ("fail_on",) and isinstance(error.get("input"), str):
        close = difflib.get_close_matches(error["input"], [s.value for s in Status], n=1)
        if close:
            message = f"{message}; did you mean {close[0]!r}?"
    if kind == "missing":
        message = "missing"
    elif "input" in error and not custom and not isinstance(error["input"], dict | list):
        message += f" (got {json.dumps(error['input'], default=str)})"
    fix = None if custom else _description(loc)
    return f"{at}: {_key_path(loc)}: {message}" + (f". Expected: {fix}" if fix else "")


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`Suite` (what ``docs/scorebox.schema.json`` holds)."""
    return Suite.model_json_schema()


def schema_text() -> str:
    """The committed form of the schema: sorted keys, two-space indent, final newline."""
    return json.dumps(suite_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m engine.suites.file > docs/scorebox.schema.json
    sys.stdout.write(schema_text())
