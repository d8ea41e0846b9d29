"""Each LLM-judged built-in the seeds define, against its published definition, over real
HTTP to the scripted OpenAI-compatible server of ``tests/fake_llm.py``.

* Okareo's checks page (seed ``001_bd325b9f62d9b3af.txt``, "Automatic checks"):
  ``conciseness``, ``uniqueness``, ``fluency``/``fluency_summary``,
  ``coherence``/``coherence_summary``, ``consistency``/``consistency_summary``,
  ``relevance``/``relevance_summary``. Published: the judge gets "a system prompt
  describing the check in question", the scale is "an integer scale ranging from 1
  to 5", and only the ``_summary`` variants read ``scenario_input``.
* Cohere's summarisation cookbook (seed ``000_fd305a66be73573f.txt``): the graders
  ``completeness``, ``correctness`` and (Cohere's) conciseness, built-in
  ``cohere_conciseness``: the published ``grading_prompt_template`` and criteria,
  temperature 0.2, score ``float(re.search(r"[12345]", reply).group()) / 5``.
* Fireworks' "LLM as a judge" (seed ``002_f3889dff8cd78541.txt``): built-in
  ``llm_judge``: the published system prompt, user message, default criteria,
  temperature 0.3, and ``parse_judgment``, except that a reply with no score (the
  published code returns 5.0) or a score outside 1-10 is ``judge_error``.

The published texts below are transcribed from the seeds; when the seeds are
beside the checkout (``../shared/seeds``, as in CI) each transcription is also
checked against its seed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engine.builtins import build_builtins
from engine.contract import Status
from engine.llm.openai_client import OpenAIClient
from engine.models import Row, RowResult
from tests.conftest import _in_ci
from tests.fake_llm import FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[2]
OKAREO_SEED = "001_bd325b9f62d9b3af.txt"
COHERE_SEED = "000_fd305a66be73573f.txt"
FIREWORKS_SEED = "002_f3889dff8cd78541.txt"


def _seed(name: str) -> str | None:
    for base in (ROOT.parent / "shared" / "seeds", ROOT.parents[1] / "shared" / "seeds"):
        if (base / name).exists():
            return (base / name).read_text(encoding="utf-8")
    return None


def _squash(text: str) -> str:
    return " ".join(text.split())


def _in_seed(seed: str, *texts: str) -> None:
    content = _seed(seed)
    if content is None:
        message = f"../shared/seeds/{seed} is not beside this checkout"
        if _in_ci():  # CI clones next to shared/: the seeds must be there
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    for text in texts:
        assert _squash(text) in _squash(content), text[:80]


def _judge(fake_llm: FakeLLM, name: str, rows: list[Row], **params: Any) -> list[RowResult]:
    llm = OpenAIClient(fake_llm.settings(llm_max_retries=0))
    return build_builtins(llm)[name].score(rows, params)


# --- seed 001: Okareo's automatic checks ---------------------------------------------------------

OKAREO_DEFINITIONS = {
    "conciseness": "The conciseness check rates the text on how concise the generated output "
    "is. If the model's output contains repeated ideas, the score will be lower.",
    "uniqueness": "The uniqueness check will rate the text on how unique the text is compared "
    "to the other outputs in the evaluation.",
    "fluency": "The fluency check is a measure of quality based on grammar, spelling, "
    "punctuation, word choice, and sentence structure.",
    "coherence": "The coherence check is a measurement of structure and organization in a "
    "model's output. A higher score indicates that the output is well-structured and "
    "organized, and a lower score indicates the opposite.",
    "consistency": "The consistency check is a measurement of factual accuracy between the "
    "model output and the scenario input.",
    "relevance": "The relevance check is a measure of summarization quality that rewards highly "
    "relevant information and penalizes redundancies or irrelevant information.",
}
OKAREO_SCALE = "integer scale ranging from 1 to 5"
OKAREO_JUDGES = [
    "conciseness",
    "uniqueness",
    "fluency",
    "fluency_summary",
    "coherence",
    "coherence_summary",
    "consistency",
    "consistency_summary",
    "relevance",
    "relevance_summary",
]


def test_okareo_transcriptions_match_the_seed() -> None:
    _in_seed(OKAREO_SEED, *OKAREO_DEFINITIONS.values(), OKAREO_SCALE)
    listed = _squash(_seed(OKAREO_SEED) or "").split("As of now, the following out-of-the box")[1]
    for name in OKAREO_JUDGES:
        assert re.search(rf"\b{name}\b", listed), name


@pytest.mark.parametrize("name", OKAREO_JUDGES)
def test_okareo_judge_prompt_and_scale(fake_llm: FakeLLM, name: str) -> None:
    fake_llm.responder = lambda body: Reply(text="Clear and correct.\nSCORE: 5")
    rows = [
        Row(id="a", model_output="Paris is the capital of France.", scenario_input="SRC-TEXT-a"),
        Row(id="b", model_output="Lyon is a city in France.", scenario_input="SRC-TEXT-b"),
    ]
    results = _judge(fake_llm, name, rows)
    assert [(r.status, r.score) for r in results] == [(Status.OK, 5), (Status.OK, 5)]
    assert isinstance(results[0].score, int)
    assert results[0].explanation == "Clear and correct."
    first = next(b for b in fake_llm.requests if "Paris" in b["messages"][1]["content"])
    system, user = (m["content"] for m in first["messages"])
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    base = name.removesuffix("_summary")
    # "a system prompt describing the check in question", on Okareo's scale
    assert OKAREO_SCALE in system
    if name == "consistency":  # without _summary only model_output is read
        assert "measurement of factual accuracy" in system
    else:
        assert _squash(OKAREO_DEFINITIONS[base]) in _squash(system)
    assert "Paris is the capital of France." in user
    # only the _summary variants read scenario_input
    assert ("SRC-TEXT-a" in user) is name.endswith("_summary")
    assert "SRC-TEXT" not in system
    # uniqueness compares each row with the other outputs of the evaluation
    assert ("Lyon is a city in France." in user) is (base == "uniqueness")


@pytest.mark.parametrize(
    ("reply", "status", "score"),
    [
        ("SCORE: 1", Status.OK, 1),
        ("Fine.\nSCORE: 3", Status.OK, 3),
        ("SCORE: 6", Status.JUDGE_ERROR, None),  # off the published 1-5 scale
        ("SCORE: 0", Status.JUDGE_ERROR, None),
        ("SCORE: 3.5", Status.JUDGE_ERROR, None),  # the scale is of integers
    ],
)
def test_okareo_scale_is_integers_from_1_to_5(
    fake_llm: FakeLLM, reply: str, status: Status, score: int | None
) -> None:
    fake_llm.reply(reply)
    [result] = _judge(fake_llm, "fluency", [Row(model_output="x")])
    assert (result.status, result.score) == (status, score)


def test_summary_variants_skip_rows_without_scenario_input(fake_llm: FakeLLM) -> None:
    fake_llm.responder = lambda body: Reply(text="SCORE: 4")
    [result] = _judge(fake_llm, "relevance_summary", [Row(model_output="x")])
    assert result.status is Status.SKIPPED and fake_llm.requests == []


# --- seed 000: Cohere's graders ------------------------------------------------------------------

COHERE_TEMPLATE = """You are an AI grader that given a prompt, a completion, and a criterion, grades the completion based on the prompt and criterion. Below is a prompt, a completion, and a criterion with which to grade the completion. You need to respond according to the criterion instructions.

PROMPT:
{prompt}

COMPLETION:
{completion}

CRITERION:
{criteria}

Do not provide an explanation or respond with additional text. Only respond with the final score in the format SCORE: <final_score>

SCORE:"""  # noqa: E501
COHERE = {
    "completeness": """Please judge the above completion on whether or not all the completion fully addresses the task posed in the prompt. The completion should contain all the information that is asked for by the prompt while also upholding the constraints mentioned in the prompt. Please return a grade between 1 and 5, where 1 means the completion does not address the prompt at all, 2 means the completion mostly does not address the prompt, 3 is neutral, 4 means the completion mostly addresses the prompt, and 5 means the completion fully addresses the prompt.""",  # noqa: E501
    "correctness": """Please judge the above completion on whether or not all information was derived from the prompt and that no information is false. Return a grade between 1 and 5, where 1 means the answers are entirely untruthful relative to the prompt, 2 means the answers are somewhat untruthful relative to the prompt, 3 means neutral, 4 means the answers are somewhat truthful relative to the prompt, and 5 means the answers are entirely truthful relative to the prompt. Evaluate only the truthfulness of the answers, not whether or not they capture all the relevant information in the prompt.""",  # noqa: E501
    "cohere_conciseness": """Please judge the above completion on whether or not the completion contains any unnecessary information or wordiness that does not help answer the specific instruction given in the prompt. Return a grade between 1 and 5, where 1 means the completion contains many unnecessary details and wordiness that do not answer the specific instruction given in the prompt, 2 means the completion contains some unnecessary details or wordiness, 3 means neutral, 4 means the completion contains few unnecessary details or wordiness, and 5 means the completion contains only necessary details that answer the specific instruction given in the prompt.""",  # noqa: E501
}


def cohere_score_llm(reply: str) -> float:
    """Seed 000: ``float(re.search(r"[12345]", completion).group()) / 5``."""
    found = re.search(r"[12345]", reply)
    assert found is not None
    return float(found.group()) / 5


def test_cohere_transcriptions_match_the_seed() -> None:
    _in_seed(COHERE_SEED, COHERE_TEMPLATE, *COHERE.values(), "temperature=0.2")


@pytest.mark.parametrize("name", list(COHERE))
def test_cohere_grader_prompt(fake_llm: FakeLLM, name: str) -> None:
    fake_llm.reply("SCORE: 4")
    row = Row(model_output="- Revenue grew.\n- Costs fell.", scenario_input="Summarise {this}.")
    [result] = _judge(fake_llm, name, [row])
    assert (result.status, result.score) == (Status.OK, 0.8)
    [request] = fake_llm.requests
    assert request["messages"] == [
        {
            "role": "user",
            "content": COHERE_TEMPLATE.format(
                prompt=row.scenario_input, completion=row.model_output, criteria=COHERE[name]
            ),
        }
    ]
    assert request["temperature"] == 0.2


@pytest.mark.parametrize(
    "reply",
    ["SCORE: 4", "4", " 2", "SCORE: 5/5", "I would give it a 3.", "SCORE: 10", "Grade 7, no: 1"],
)
def test_cohere_score_is_the_first_digit_over_5(fake_llm: FakeLLM, reply: str) -> None:
    fake_llm.reply(reply)
    [result] = _judge(fake_llm, "correctness", [Row(model_output="x", scenario_input="p")])
    assert result.status is Status.OK, result
    assert result.score == pytest.approx(cohere_score_llm(reply))


def test_cohere_reply_without_a_grade_and_row_without_prompt(fake_llm: FakeLLM) -> None:
    fake_llm.reply("no grade at all")  # the published code raises here
    rows = [Row(model_output="x", scenario_input="p"), Row(model_output="y")]
    results = _judge(fake_llm, "completeness", rows)
    assert [r.status for r in results] == [Status.JUDGE_ERROR, Status.SKIPPED]
    assert len(fake_llm.requests) == 1


# --- seed 002: Fireworks' LLM as a judge -------------------------------------------------------

FIREWORKS_SYSTEM = (
    "You are an expert evaluator. Your job is to objectively assess the quality of AI "
    "assistant responses."
)
FIREWORKS_CRITERIA = """
Please evaluate the quality of the assistant's response based on:
1. Accuracy: Is the information correct?
2. Helpfulness: Does it address the user's question?
3. Clarity: Is it well-explained and easy to understand?
4. Completeness: Does it cover all necessary aspects?

Provide a score from 1-10 (10 being best) and explain your reasoning.
"""


def fireworks_user(history: str, response: str, criteria: str) -> str:
    """Seed 002: the judge's user message."""
    return f"""Here is a conversation and a response to evaluate:

CONVERSATION HISTORY:
{history}

RESPONSE TO EVALUATE:
{response}

EVALUATION CRITERIA:
{criteria}

Please respond in the following format:
Score: [1-10]
Reasoning: [Your detailed explanation]
"""


def format_conversation(messages: list[dict[str, str]]) -> str:
    """Seed 002, verbatim."""
    if not messages:
        return "[No prior conversation]"
    formatted = []
    for msg in messages:
        role = msg["role"].upper()
        content = msg["content"]
        formatted.append(f"{role}: {content}")
    return "\n\n".join(formatted)


def parse_judgment(text: str) -> tuple[float | None, str]:
    """Seed 002's parser, without its ``score = 5.0`` default (None here instead)."""
    lines = text.strip().split("\n")
    score = None
    reasoning = ""
    for i, line in enumerate(lines):
        if line.startswith("Score:"):
            score_text = line.replace("Score:", "").strip()
            try:
                score = float(score_text.split("/")[0].strip())
            except ValueError:
                score = None
        elif line.startswith("Reasoning:"):
            reasoning = line.replace("Reasoning:", "").strip()
            if i + 1 < len(lines):
                reasoning += "\n" + "\n".join(lines[i + 1 :])
            break
    if not reasoning:
        reasoning = text
    return score, reasoning


def test_fireworks_transcriptions_match_the_seed() -> None:
    _in_seed(
        FIREWORKS_SEED,
        FIREWORKS_SYSTEM,
        FIREWORKS_CRITERIA,
        fireworks_user(
            "{format_conversation(conversation_history)}",
            "{result_to_evaluate['content']}",
            "{criteria}",
        ),
        "temperature=kwargs.pop('temperature', 0.3)",
    )


CONVERSATION = [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Do you mean today?"},
    {"role": "user", "content": "Yes."},
]


@pytest.mark.parametrize(
    ("scenario_input", "history"),
    [
        (CONVERSATION, format_conversation(CONVERSATION)),
        ("What is 2 + 2?", format_conversation([{"role": "user", "content": "What is 2 + 2?"}])),
        (None, "[No prior conversation]"),
    ],
)
def test_fireworks_judge_prompt(fake_llm: FakeLLM, scenario_input: Any, history: str) -> None:
    fake_llm.reply("Score: 8\nReasoning: Correct and brief.")
    row = Row(model_output="Paris.", scenario_input=scenario_input)
    [result] = _judge(fake_llm, "llm_judge", [row])
    assert (result.status, result.score, result.explanation) == (
        Status.OK,
        8,
        "Correct and brief.",
    )
    [request] = fake_llm.requests
    assert request["messages"] == [
        {"role": "system", "content": FIREWORKS_SYSTEM},
        {"role": "user", "content": fireworks_user(history, "Paris.", FIREWORKS_CRITERIA)},
    ]
    assert request["temperature"] == 0.3


def test_fireworks_custom_criteria(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Score: 3/10\nReasoning: Rude.")
    [result] = _judge(fake_llm, "llm_judge", [Row(model_output="No.")], criteria="Politeness.")
    assert result.score == 3
    assert fake_llm.requests[0]["messages"][1]["content"] == fireworks_user(
        "[No prior conversation]", "No.", "Politeness."
    )


@pytest.mark.parametrize(
    "reply",
    [
        "Score: 7\nReasoning: Good.\nMore detail.",
        "Score: 7/10\nReasoning: ok",
        "Score: 9.5\nReasoning: Nearly perfect.",
        "Score: 2\nScore: 6\nReasoning: the last Score line before Reasoning counts",
        "Score: 10",
        "Thinking first.\nScore: 4\nReasoning: Some gaps.",
    ],
)
def test_fireworks_score_is_parse_judgment(fake_llm: FakeLLM, reply: str) -> None:
    fake_llm.reply(reply)
    [result] = _judge(fake_llm, "llm_judge", [Row(model_output="x")])
    score, reasoning = parse_judgment(reply)
    assert result.status is Status.OK, result
    assert (result.score, result.explanation) == (score, reasoning)


@pytest.mark.parametrize(
    "reply", ["Great answer!", "Score: high\nReasoning: no number", "Score: 42\nReasoning: x"]
)
def test_fireworks_made_up_scores_are_judge_errors(fake_llm: FakeLLM, reply: str) -> None:
    """The published parser returns 5.0 (no score) or any number; scorebox says judge_error."""
    fake_llm.reply(reply)
    [result] = _judge(fake_llm, "llm_judge", [Row(model_output="x")])
    assert result.status is Status.JUDGE_ERROR, result
