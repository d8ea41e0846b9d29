"""Each scorer format's own module (engine/contract/formats/<format>.py): its spec, how its
entry fits and binds a row, what its return values mean; and the table assembled from them,
with no format named in the generic drivers."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.contract import InvalidScore, OutputType
from engine.contract.formats import (
    ADAPTERS,
    FORMATS,
    Format,
    braintrust,
    grader,
    langsmith,
    okareo,
    promptfoo,
    reward_kit,
    shapes_of,
)
from engine.contract.formats.shapes import FunctionShape

ROOT = Path(__file__).resolve().parents[2]
MODULES = (okareo, reward_kit, grader, promptfoo, braintrust, langsmith)

ROW: dict[str, Any] = {
    "i": 3,
    "model_output": '{"answer": 4}',
    "scenario_input": "2+2?",
    "scenario_result": "4",
    "metadata": {"topic": "math"},
}


def _shape(source: str) -> FunctionShape:
    shapes, _ = shapes_of(ast.parse(textwrap.dedent(source)))
    return shapes[-1]


def test_the_table_is_assembled_from_one_module_per_format() -> None:
    assert [m.ADAPTER.format for m in MODULES] == list(Format)
    for module in MODULES:
        assert ADAPTERS[module.SPEC.format] is module.ADAPTER
        assert FORMATS[module.SPEC.format] is module.SPEC


def test_the_generic_drivers_name_no_format() -> None:
    """A format's behaviour comes from its module: the drivers read adapter fields only."""
    folder = ROOT / "engine" / "contract" / "formats"
    generic = ("detection.py", "calls.py", "keywords.py", "spec.py", "rows.py", "results.py")
    for name in generic:
        text = (folder / name).read_text()
        used = [f"Format.{f.name}" for f in Format if f"Format.{f.name}" in text]
        assert not used, f"{name} names {used}: put the behaviour in the format's module"


# -- okareo ----------------------------------------------------------------------------


def test_okareo_fits_any_row_fields_or_none() -> None:
    assert okareo.fits(_shape("def evaluate(): ..."))
    assert okareo.fits(_shape("def evaluate(model_output, metadata): ..."))
    assert not okareo.fits(_shape("def evaluate(output): ..."))
    assert not okareo.fits(_shape("def evaluate(model_output, *rest): ..."))


def test_okareo_binds_by_name_with_empty_metadata() -> None:
    shape = _shape("def evaluate(model_output, metadata, model_input=None): ...")
    args, kwargs = okareo.bind(shape, {"model_output": "x"})
    assert args == [] and kwargs == {"model_output": "x", "metadata": {}, "model_input": None}


def test_okareo_coerces_as_the_contract_does() -> None:
    assert okareo.ADAPTER.coerce((0.5, "half"), None).explanation == "half"
    with pytest.raises(InvalidScore):
        okareo.ADAPTER.coerce("high", None)


# -- reward-kit ------------------------------------------------------------------------


def test_reward_kit_fits_only_its_decorator() -> None:
    assert reward_kit.fits(_shape("@reward_function\ndef f(messages, **kw): ..."))
    assert not reward_kit.fits(_shape("def f(messages, **kw): ..."))


def test_reward_kit_passes_configuration_to_keywords_and_kwargs() -> None:
    shape = _shape("@reward_function\ndef f(messages: List[Message], k=1, **kw): ...")
    _, kwargs = reward_kit.bind(shape, ROW, lambda m: ("Message", m["role"]), {"k": 5, "x": 2})
    assert kwargs["messages"] == [("Message", "user"), ("Message", "assistant")]
    assert kwargs["k"] == 5 and kwargs["x"] == 2


def test_reward_kit_metrics_become_sub_scores_and_other_keys_metadata() -> None:
    score = reward_kit.coerce(
        {"score": 0.5, "reasoning": "why", "metrics": {"m": {"score": 1, "reason": "r"}}, "n": 1}
    )
    assert score.explanation == "why"
    assert score.metadata == {"sub_scores": {"m": {"score": 1, "reason": "r"}}, "n": 1}
    with pytest.raises(InvalidScore, match="returned None"):
        reward_kit.coerce(None)


# -- grader ----------------------------------------------------------------------------


def test_grader_builds_sample_and_item_from_the_row() -> None:
    (sample, item), kwargs = grader.bind(_shape("def grade(s, i): ..."), ROW)
    assert kwargs == {}
    assert sample["output_text"] == ROW["model_output"] and sample["output_json"] == {"answer": 4}
    assert item == {k: v for k, v in ROW.items() if k != "i"}


def test_grader_returns_a_number_only() -> None:
    assert grader.coerce(1).score == 1.0
    with pytest.raises(InvalidScore, match="returns a number, got bool"):
        grader.coerce(True)


# -- promptfoo -------------------------------------------------------------------------


def test_promptfoo_takes_any_two_names_only_when_named_at_upload() -> None:
    shape = _shape("def check_it(text, ctx): ...")
    assert promptfoo.loose_fit(shape, True) and not promptfoo.loose_fit(shape, False)


def test_promptfoo_context_carries_vars_config_and_prompt() -> None:
    (output, context), _ = promptfoo.bind(_shape("def get_assert(o, c): ..."), ROW, None, {"t": 1})
    assert output == {"answer": 4}
    assert context["vars"] == ROW["metadata"] and context["config"] == {"t": 1}
    assert context["prompt"] == "2+2?"


def test_promptfoo_pass_follows_the_score_and_a_grading_result_must_be_whole() -> None:
    assert promptfoo.coerce(0.0).passed is False and promptfoo.coerce(2).passed is True
    with pytest.raises(InvalidScore, match="lacks reason"):
        promptfoo.coerce({"pass": True, "score": 1})


# -- braintrust / phoenix ---------------------------------------------------------------


def test_braintrust_lone_unknown_parameter_gets_the_output() -> None:
    shape = _shape("def judge(answer): ...")
    assert braintrust.lone_output(shape) and braintrust.loose_fit(shape, True)
    assert braintrust.bind(shape, ROW) == ([], {"answer": {"answer": 4}})
    assert "Phoenix" in (braintrust.own_bindings(shape) or {})["answer"]


def test_braintrust_skips_none_and_averages_lists() -> None:
    assert braintrust.skips(None) and braintrust.skips({"score": None})
    assert not braintrust.skips({"score": 0})
    score = braintrust.coerce([{"name": "a", "score": 1}, {"name": "b", "score": 0}])
    assert score.score == 0.5 and set(score.metadata["sub_scores"]) == {"a", "b"}  # type: ignore[index]


# -- langsmith -------------------------------------------------------------------------


def test_langsmith_records_have_attributes() -> None:
    shape = _shape("def correct(run, example): ...")
    _, kwargs = langsmith.bind(shape, ROW)
    assert kwargs["run"].outputs == {"answer": 4}
    assert kwargs["example"].outputs == {"output": "4"}


def test_langsmith_metric_named_results_become_keyed() -> None:
    score = langsmith.coerce({"correctness": 1, "comment": "fine"}, OutputType.FLOAT)
    assert score.score == 1.0 and score.explanation == "fine"
    assert score.metadata == {"key": "correctness"}
