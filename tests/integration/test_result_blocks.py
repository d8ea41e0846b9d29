"""Result blocks and one record per row give the same results (real Docker, both runtimes).

A property test: random mixes of rows that score, raise, time out, crash, flood their
output, return an invalid score, explain themselves, print, lack a required input or
return an int past 2**53 go through a runner in block mode (``SCOREBOX_RESULT_BLOCKS``, the
default) and one in per-row mode, and every row's result must be equal in both (all but
its duration); the same mixes given to ``engine.score_table`` as columns (the columns
path, in and out) agree with them too. Rows of random fields (some absent, some null,
large, non-ASCII) reach a check that echoes its arguments as each row's own, given as rows
or as columns. (A check that writes into the
columns it shares with the harness's parent is in tests/security/test_harness_sabotage.py,
under both runtimes.)
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.hypothesis_budget import examples

pytestmark = pytest.mark.docker

LIMITS = Limits(row_timeout_seconds=1, wall_seconds_max=120, max_output_bytes=20_000)

CHECK = CodeCheck(
    textwrap.dedent(
        """
        import os, signal, time

        def evaluate(model_output: str, scenario_input: str) -> object:
            kind, _, arg = model_output.partition(":")
            if kind == "ok":
                return int(arg) % 2 == 0
            if kind == "float":
                return int(arg) / 7
            if kind == "raise":
                raise ValueError("row " + arg)
            if kind == "sleep":
                time.sleep(5)
            if kind == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            if kind == "exit":
                os._exit(3)
            if kind == "flood":
                print("x" * 30_000)
            if kind == "invalid":
                return float("nan")
            if kind == "explain":
                return {"score": True, "explanation": "because " + arg}
            if kind == "print":
                print("saw", arg)
                return True
            if kind == "big":
                return 2**60 + int(arg)
            return False
        """
    )
)

KINDS = ["ok", "float", "raise", "sleep", "crash", "exit", "flood", "invalid", "explain"]
KINDS += ["print", "big", "skip"]


def row(kind: str, n: int) -> dict[str, object]:
    if kind == "skip":
        return {"model_output": f"ok:{n}"}  # no scenario_input: the check is skipped
    return {"model_output": f"{kind}:{n}", "scenario_input": "q"}


@pytest.fixture(scope="module")
def runners(docker_settings: Settings) -> Iterator[tuple[SandboxRunner, SandboxRunner]]:
    # score_table's jobs as large as run_check's: a check's score type is held per job.
    size = {"job_max_rows": 7, "table_job_max_rows": 7}
    blocks = docker_settings.model_copy(update={"result_blocks": True, **size})
    rows = docker_settings.model_copy(update={"result_blocks": False, **size})
    with SandboxRunner(blocks) as a, SandboxRunner(rows) as b:
        yield a, b


def comparable(result: RowResult) -> dict[str, object]:
    return result.model_dump(exclude={"duration_ms"})


# Each kind at most twice, a slow one (a timeout) at most once: a mix runs in seconds.
mixes = st.lists(st.sampled_from(KINDS), min_size=1, max_size=16).filter(
    lambda kinds: kinds.count("sleep") <= 1 and all(kinds.count(k) <= 3 for k in KINDS)
)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example runs containers
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(kinds=mixes)
def test_blocks_and_rows_agree(
    runners: tuple[SandboxRunner, SandboxRunner], kinds: list[str]
) -> None:
    blocks, per_row = runners
    data = [row(kind, n) for n, kind in enumerate(kinds)]
    by_block = blocks.run_check(CHECK, data, LIMITS)
    by_row = per_row.run_check(CHECK, data, LIMITS)
    assert [comparable(r) for r in by_block] == [comparable(r) for r in by_row], kinds


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(kinds=mixes)
def test_columns_in_and_rows_records_agree(
    runners: tuple[SandboxRunner, SandboxRunner], kinds: list[str]
) -> None:
    """The same mixes given to score_table as columns (no Row made per row on the way in,
    results as columns) and to run_check one record per row: equal results."""
    blocks, per_row = runners
    data = [row(kind, n) for n, kind in enumerate(kinds)]
    columns = {name: [r.get(name) for r in data] for name in ("model_output", "scenario_input")}
    table = blocks.score_table(CHECK, columns, LIMITS)
    by_row = per_row.run_check(CHECK, data, LIMITS)
    assert len(table) == len(by_row)
    for k, result in enumerate(by_row):
        got = table.row_result(k)
        fields = ("status", "score", "error", "explanation", "output")
        assert [getattr(got, f) for f in fields] == [getattr(result, f) for f in fields], kinds
        assert type(got.score) is type(result.score), kinds
        assert table.status[k] == result.status.value, kinds


#: Checks that answer with what they were given: a digest of their arguments as JSON. One
#: takes every field by keyword (``**fields``: it requires none, and gets an absent one as
#: None), one names them all (bound by position: skipped where scenario_input or
#: scenario_result is absent); one names only fields no row needs, so every row is scored.
ECHO_CHECKS = {
    "keywords": "def evaluate(model_output, **fields):\n    return echo(model_output, fields)\n",
    "named": (
        "def evaluate(model_output, scenario_input, scenario_result, metadata, model_input):\n"
        "    fields = dict(scenario_input=scenario_input, scenario_result=scenario_result,\n"
        "                  metadata=metadata, model_input=model_input)\n"
        "    return echo(model_output, fields)\n"
    ),
    "optional": (
        "def evaluate(model_output, metadata, model_input):\n"
        "    return echo(model_output, dict(metadata=metadata, model_input=model_input))\n"
    ),
}
ECHO = (
    "import hashlib, json\n"
    "def echo(model_output, fields):\n"
    "    seen = json.dumps([model_output, fields], sort_keys=True)\n"
    "    return len(seen), hashlib.sha256(seen.encode()).hexdigest()\n"
)


def echoed(row: dict[str, object], shape: str) -> tuple[Status, int | None, str | None]:
    """What the echo check of ``shape`` answers for ``row`` (absent fields None, metadata
    ``{}``): skipped, or its score and explanation."""
    fields = {
        "scenario_input": row.get("scenario_input"),
        "scenario_result": row.get("scenario_result"),
        "metadata": row.get("metadata") or {},
        "model_input": row.get("model_input"),
    }
    if shape == "optional":
        del fields["scenario_input"], fields["scenario_result"]
    elif shape == "named" and (
        fields["scenario_input"] is None or fields["scenario_result"] is None
    ):
        return Status.SKIPPED, None, None
    seen = json.dumps([row["model_output"], fields], sort_keys=True)
    return Status.OK, len(seen), hashlib.sha256(seen.encode()).hexdigest()


TEXT = st.text(max_size=16)  # any Unicode but lone surrogates (JSON cannot carry those)
LARGE = st.integers(20_000, 120_000).map(lambda n: "é☃\U0001f600" * (n // 3))
VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
FIELDS: dict[str, st.SearchStrategy[object]] = {
    "scenario_input": VALUE | LARGE,
    "scenario_result": VALUE,
    "metadata": st.dictionaries(TEXT, VALUE, max_size=3),
    "model_input": TEXT | LARGE,
}


@st.composite
def field_mixes(draw: st.DrawFn) -> list[dict[str, object]]:
    """1 to 12 rows, each with model_output and any of the other fields (a field some rows
    lack, or none has; null values; large and non-ASCII values)."""
    names = draw(st.sets(st.sampled_from(sorted(FIELDS))))
    size = draw(st.integers(1, 12))
    rows: list[dict[str, object]] = []
    for _ in range(size):
        row: dict[str, object] = {"model_output": draw(TEXT | LARGE)}
        for name in sorted(names):
            if draw(st.booleans()):
                row[name] = draw(FIELDS[name])
        rows.append(row)
    return rows


@pytest.mark.parametrize("shape", sorted(ECHO_CHECKS))
def test_columns_in_give_each_row_its_own_fields(
    runners: tuple[SandboxRunner, SandboxRunner], shape: str
) -> None:
    """Rows of random fields reach the check as columns, given to run_check as rows (either
    result protocol) or to score_table as columns: each row's check sees its own values,
    and the results are equal."""
    blocks, per_row = runners
    check = CodeCheck(ECHO + ECHO_CHECKS[shape])

    @settings(
        max_examples=examples(30),
        deadline=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=field_mixes())
    def agree(data: list[dict[str, object]]) -> None:
        by_block = blocks.run_check(check, data, LIMITS)
        by_row = per_row.run_check(check, data, LIMITS)
        names = {name for row in data for name in row}
        columns = {
            name: [row.get(name, {} if name == "metadata" else None) for row in data]
            for name in names
        }
        table = blocks.score_table(check, columns, LIMITS)
        for k, row in enumerate(data):
            expected = echoed(row, shape)
            for got in (by_block[k], by_row[k], table.row_result(k)):
                assert (got.status, got.score, got.explanation) == expected, (k, got.error)

    agree()


def test_each_kind_has_its_status(runners: tuple[SandboxRunner, SandboxRunner]) -> None:
    """The mix above covers what it says: each kind gives its own status in block mode."""
    blocks, _ = runners
    expected = {
        "ok": Status.OK,
        "float": Status.OK,
        "raise": Status.ERROR,
        "sleep": Status.TIMEOUT,
        "crash": Status.CRASHED,
        "exit": Status.CRASHED,
        "flood": Status.OUTPUT_LIMIT,
        "invalid": Status.INVALID_SCORE,
        "explain": Status.OK,
        "print": Status.OK,
        "big": Status.OK,
        "skip": Status.SKIPPED,
    }
    for kind, status in expected.items():
        (result,) = blocks.run_check(CHECK, [row(kind, 4)], LIMITS)
        assert result.status is status, (kind, result)
    (big,) = blocks.run_check(CHECK, [row("big", 3)], LIMITS)
    assert big.score == 2**60 + 3  # exact, though the block's score column is a float
    (explained,) = blocks.run_check(CHECK, [row("explain", 5)], LIMITS)
    assert explained.explanation == "because 5"


def test_score_table_gives_run_checks_results_as_columns(
    runners: tuple[SandboxRunner, SandboxRunner],
) -> None:
    blocks, _ = runners
    kinds = ["ok", "raise", "explain", "print", "big", "skip", "invalid", "float", "crash", "ok"]
    data = [row(kind, n) for n, kind in enumerate(kinds)]
    table = blocks.score_table(CHECK, data, LIMITS)
    results = blocks.run_check(CHECK, data, LIMITS)
    assert len(table) == len(results)
    for k, result in enumerate(results):
        got = table.row_result(k)
        assert (got.status, got.score, got.error, got.explanation, got.output) == (
            result.status,
            result.score,
            result.error,
            result.explanation,
            result.output,
        ), kinds[k]
        assert type(got.score) is type(result.score)
    assert table.counts()["ok"] == sum(r.status is Status.OK for r in results)
    assert set(table.columns()) >= {"status", "score", "output_type", "error"}


def test_score_table_takes_columns(runners: tuple[SandboxRunner, SandboxRunner]) -> None:
    import numpy as np

    blocks, _ = runners
    outputs = np.array([f"ok:{n}" for n in range(1, 2001)])
    columns: dict[str, Sequence[object]] = {
        "model_output": outputs,  # type: ignore[dict-item]  # a numpy array is a sequence here
        "scenario_input": ["q"] * len(outputs),
    }
    table = blocks.score_table(CHECK, columns, LIMITS)
    assert len(table) == 2000 and table.counts() == {"ok": 2000}
    assert table.score.tolist() == [float(n % 2 == 0) for n in range(1, 2001)]
    assert set(table.output_type.tolist()) == {"bool"}


def test_score_table_names_a_bad_row(runners: tuple[SandboxRunner, SandboxRunner]) -> None:
    from engine.errors import InvalidRequestError

    blocks, _ = runners
    with pytest.raises(InvalidRequestError, match=r"row 3 \(rows\[2\]\): model_output"):
        blocks.score_table(CHECK, {"model_output": ["a", "b", 3]}, LIMITS)
    with pytest.raises(InvalidRequestError, match="differ in length"):
        blocks.score_table(CHECK, {"model_output": ["a"], "scenario_input": []}, LIMITS)
    with pytest.raises(InvalidRequestError, match="model_output"):
        blocks.score_table(CHECK, {"scenario_input": ["a"]}, LIMITS)


#: Checks of other formats that read what a row does not hold (its absent fields, which a
#: row made from columns leaves out of the job) or all of its fields (a grader's ``item``).
FORMAT_CHECKS = {
    "grader": (
        "def grade(sample, item) -> float:\n"
        "    return float(len(item)) + (1.0 if item.get('model_input') is None else 0.5)\n"
    ),
    "promptfoo": (
        "def get_assert(output, context):\n"
        "    return float(len(context['vars']) + len(context['prompt'] or ''))\n"
    ),
    "braintrust": (
        "def handler(input, output, expected, metadata):\n"
        "    return 1.0 if metadata == {} and expected == 'Paris' else 0.0\n"
    ),
    "phoenix": "def matches(output, reference):\n    return 1.0 if reference is None else 0.5\n",
    "langsmith": (
        "def correct(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:\n"
        "    return {'key': 'k', 'score': len(inputs) + len(reference_outputs)}\n"
    ),
    "okareo": (
        "def evaluate(model_output, scenario_input=None, metadata=None, model_input=None):\n"
        "    return [scenario_input, metadata, model_input] == ['q', {}, None]\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FORMAT_CHECKS))
def test_formats_read_columns_as_rows(
    runners: tuple[SandboxRunner, SandboxRunner], name: str
) -> None:
    blocks, _ = runners
    check = CodeCheck(FORMAT_CHECKS[name])
    columns: dict[str, Sequence[object]] = {
        "model_output": ["Paris", "Lyon"],
        "scenario_input": ["q", None],
        "scenario_result": ["Paris", None],
    }
    data = [{k: v[i] for k, v in columns.items() if v[i] is not None} for i in range(2)]
    table = blocks.score_table(check, columns, LIMITS)
    results = blocks.run_check(check, data, LIMITS)
    assert results[0].status is Status.OK, results[0].error
    for k, result in enumerate(results):
        got = table.row_result(k)
        assert (got.status, got.score, got.error) == (result.status, result.score, result.error)
