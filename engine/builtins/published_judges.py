"""LLM judges published with their code: Cohere's summarisation-evals graders and
Fireworks' LLM-as-a-judge reward function, each with its own prompt, scale and parser.

Cohere (the summarisation cookbook's ``score_llm``): ``completeness``,
``correctness`` and ``cohere_conciseness`` (Okareo's ``conciseness`` has the
plain name). One user message, the published ``grading_prompt_template`` with
``scenario_input`` as PROMPT, ``model_output`` as COMPLETION and the published
criterion; temperature 0.2; the score is the first digit 1-5 in the reply,
divided by 5 (0.2 to 1.0). Rows without ``scenario_input`` are ``skipped``.

Fireworks (``LLM as a judge``): ``llm_judge``. The published system prompt and
user message (CONVERSATION HISTORY, RESPONSE TO EVALUATE, EVALUATION CRITERIA,
default criteria or the ``criteria`` parameter), temperature 0.3; the score is
the number on the ``Score:`` line (``7/10`` reads 7), 1 to 10, and the
explanation what follows ``Reasoning:``. ``model_output`` is the response;
``scenario_input`` is the conversation before it (a list of ``{role, content}``
messages, or a string: one user message; none: "[No prior conversation]").

Where the published code would make a score up, scorebox reports
``judge_error`` instead: Cohere's parser raises on a reply with no digit 1-5
(``re.search(...).group()`` on None), and Fireworks' returns 5.0 when no
``Score:`` line parses and any number at all otherwise; here a reply without a
score, or (Fireworks) a score outside 1-10, is ``judge_error``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.builtins.base import BuiltinCheck, as_text
from engine.contract import OutputType
from engine.judging.execute import JudgeConfig, PromptSkip, judge_rows
from engine.judging.parse import ParsedScore, UnparseableReplyError
from engine.llm.client import LLMClient, Message
from engine.models import Row, RowResult

# --- Cohere: the summarisation cookbook's graders, verbatim ------------------------------------

COHERE_GRADING_PROMPT_TEMPLATE = """You are an AI grader that given a prompt, a completion, and a criterion, grades the completion based on the prompt and criterion. Below is a prompt, a completion, and a criterion with which to grade the completion. You need to respond according to the criterion instructions.

PROMPT:
{prompt}

COMPLETION:
{completion}

CRITERION:
{criteria}

Do not provide an explanation or respond with additional text. Only respond with the final score in the format SCORE: <final_score>

SCORE:"""  # noqa: E501 (the published template, unwrapped)

COHERE_CRITERIA: dict[str, str] = {
    "completeness": "Please judge the above completion on whether or not all the completion fully addresses the task posed in the prompt. The completion should contain all the information that is asked for by the prompt while also upholding the constraints mentioned in the prompt. Please return a grade between 1 and 5, where 1 means the completion does not address the prompt at all, 2 means the completion mostly does not address the prompt, 3 is neutral, 4 means the completion mostly addresses the prompt, and 5 means the completion fully addresses the prompt.",  # noqa: E501
    "correctness": "Please judge the above completion on whether or not all information was derived from the prompt and that no information is false. Return a grade between 1 and 5, where 1 means the answers are entirely untruthful relative to the prompt, 2 means the answers are somewhat untruthful relative to the prompt, 3 means neutral, 4 means the answers are somewhat truthful relative to the prompt, and 5 means the answers are entirely truthful relative to the prompt. Evaluate only the truthfulness of the answers, not whether or not they capture all the relevant information in the prompt.",  # noqa: E501
    "cohere_conciseness": "Please judge the above completion on whether or not the completion contains any unnecessary information or wordiness that does not help answer the specific instruction given in the prompt. Return a grade between 1 and 5, where 1 means the completion contains many unnecessary details and wordiness that do not answer the specific instruction given in the prompt, 2 means the completion contains some unnecessary details or wordiness, 3 means neutral, 4 means the completion contains few unnecessary details or wordiness, and 5 means the completion contains only necessary details that answer the specific instruction given in the prompt.",  # noqa: E501
}

_COHERE_DESCRIPTIONS = {
    "completeness": "Cohere's completeness: the completion fully addresses the task and "
    "constraints of the prompt (scenario_input).",
    "correctness": "Cohere's correctness: all information in the completion is derived from "
    "the prompt (scenario_input) and none is false.",
    "cohere_conciseness": "Cohere's conciseness: no unnecessary information or wordiness for "
    "the prompt's (scenario_input's) instruction.",
}
_COHERE_DIGIT = re.compile(r"[12345]")


def parse_cohere(text: str) -> ParsedScore:
    """Cohere's ``float(re.search(r"[12345]", completion).group()) / 5``."""
    found = _COHERE_DIGIT.search(text)
    if found is None:
        raise UnparseableReplyError("no digit 1-5 in the reply (Cohere's grader reads the first)")
    explanation = text.strip()[:4000] or None
    return ParsedScore(float(found.group()) / 5, explanation)


class CohereParams(BaseModel):
    """Parameters of Cohere's graders."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=7,
        description="Judge models; several make an ensemble (mean score). "
        "Default: SCOREBOX_LLM_MODEL.",
    )
    temperature: float = Field(default=0.2, ge=0, le=2, description="Cohere's cookbook: 0.2.")
    max_tokens: int = Field(default=600, ge=16, le=8192)


def cohere_messages(criterion: str, row: Row) -> list[Message]:
    """The one user message of Cohere's ``score_llm``; :class:`PromptSkip` without a prompt."""
    prompt = as_text(row.scenario_input)
    if prompt is None:
        raise PromptSkip("the row has no scenario_input, which is the PROMPT Cohere grades against")
    content = COHERE_GRADING_PROMPT_TEMPLATE.format(
        prompt=prompt, completion=row.model_output, criteria=COHERE_CRITERIA[criterion]
    )
    return [{"role": "user", "content": content}]


# --- Fireworks: LLM as a judge, verbatim ---------------------------------------------------------

FIREWORKS_SYSTEM_PROMPT = (
    "You are an expert evaluator. Your job is to objectively assess the quality of AI "
    "assistant responses."
)
FIREWORKS_DEFAULT_CRITERIA = """
Please evaluate the quality of the assistant's response based on:
1. Accuracy: Is the information correct?
2. Helpfulness: Does it address the user's question?
3. Clarity: Is it well-explained and easy to understand?
4. Completeness: Does it cover all necessary aspects?

Provide a score from 1-10 (10 being best) and explain your reasoning.
"""
FIREWORKS_USER_TEMPLATE = """Here is a conversation and a response to evaluate:

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


class FireworksParams(BaseModel):
    """Parameters of ``llm_judge``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criteria: str | None = Field(
        default=None,
        max_length=20_000,
        description="Evaluation criteria (default: Fireworks' accuracy, helpfulness, clarity, "
        "completeness; 1-10).",
    )
    models: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=7,
        description="Judge models; several make an ensemble (mean score). "
        "Default: SCOREBOX_LLM_MODEL.",
    )
    temperature: float = Field(default=0.3, ge=0, le=2, description="Fireworks: 0.3.")
    max_tokens: int = Field(default=600, ge=16, le=8192)


def format_conversation(messages: Sequence[Any]) -> str:
    """Fireworks' ``format_conversation``: ``ROLE: content`` blocks."""
    if not messages:
        return "[No prior conversation]"
    formatted = []
    for message in messages:
        if isinstance(message, dict):
            role = str(message.get("role", "user")).upper()
            content = message.get("content", "")
        else:
            role, content = "USER", message
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        formatted.append(f"{role}: {content}")
    return "\n\n".join(formatted)


def _history(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [{"role": "user", "content": as_text(value) or ""}]


def fireworks_messages(row: Row, criteria: str | None) -> list[Message]:
    """Fireworks' judge messages: the conversation is ``scenario_input``, the response
    ``model_output``."""
    content = FIREWORKS_USER_TEMPLATE.format(
        history=format_conversation(_history(row.scenario_input)),
        response=row.model_output,
        criteria=FIREWORKS_DEFAULT_CRITERIA if criteria is None else criteria,
    )
    return [
        {"role": "system", "content": FIREWORKS_SYSTEM_PROMPT},
        {"role": "user", "content": content},
    ]


def parse_fireworks(text: str) -> ParsedScore:
    """Fireworks' ``parse_judgment``, but a missing or out-of-scale score is an error (the
    published code returns 5.0, or any number)."""
    lines = text.strip().split("\n")
    score: float | None = None
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
    if score is None:
        raise UnparseableReplyError("no `Score: <1-10>` line (Fireworks' judge format)")
    if not 1 <= score <= 10:
        raise UnparseableReplyError(f"score {score:g} is outside Fireworks' scale 1-10")
    if not reasoning:
        reasoning = text
    return ParsedScore(int(score) if score.is_integer() else score, reasoning[:4000])


# --- the built-ins ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cohere:
    name: str

    def batch(self, rows: Sequence[Row], params: CohereParams, llm: LLMClient | None) -> Any:
        cfg = JudgeConfig(
            models=tuple(params.models) if params.models else (None,),
            check_type="score",
            low=None,
            high=None,
            temperature=params.temperature,
            max_tokens=params.max_tokens,
            parse=parse_cohere,
        )
        return judge_rows(rows, lambda _i, row: cohere_messages(self.name, row), llm, cfg)


def published_judge_builtins(llm: LLMClient | None) -> list[BuiltinCheck[Any]]:
    """Cohere's graders and Fireworks' judge, bound to ``llm`` (None: ``judge_error``)."""
    checks: list[BuiltinCheck[Any]] = []
    for name in COHERE_CRITERIA:
        cohere = _Cohere(name)

        def batch(
            rows: Sequence[Row], params: CohereParams, _cohere: _Cohere = cohere
        ) -> list[RowResult]:
            results: list[RowResult] = _cohere.batch(rows, params, llm)
            return results

        checks.append(
            BuiltinCheck(
                name,
                _COHERE_DESCRIPTIONS[name] + " LLM-judged, 1-5 divided by 5 (0.2-1.0).",
                OutputType.FLOAT,
                CohereParams,
                batch,
                kind="model",
                requires=("scenario_input",),
            )
        )

    def fireworks(rows: Sequence[Row], params: FireworksParams) -> list[RowResult]:
        cfg = JudgeConfig(
            models=tuple(params.models) if params.models else (None,),
            check_type="score",
            low=1,
            high=10,
            temperature=params.temperature,
            max_tokens=params.max_tokens,
            parse=parse_fireworks,
        )
        return judge_rows(rows, lambda _i, row: fireworks_messages(row, params.criteria), llm, cfg)

    checks.append(
        BuiltinCheck(
            "llm_judge",
            "Fireworks' LLM-as-a-judge: the response's accuracy, helpfulness, clarity and "
            "completeness given the conversation (scenario_input), or your `criteria`. "
            "LLM-judged, 1-10.",
            OutputType.FLOAT,
            FireworksParams,
            fireworks,
            kind="model",
        )
    )
    return checks
