# ruff: noqa: E501  (the seeds' judge code is quoted as published)
"""The metered model gateway, end to end in real containers, under each runtime.

A check calls the operator's model with the clients in the image (``OpenAI()``,
``cohere.Client()``, ``genai.Client()``, no arguments); the harness relays each request over
the job's channel; the host answers through the LLM client against the scripted server in
``tests/fake_llm.py``. Run with ``SCOREBOX_TEST_DOCKER=1 SCOREBOX_IMAGE=...``.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.contract import Status
from engine.gateway import ModelGateway, gateway_session
from engine.llm import MemoryResponseCache
from engine.llm.cache import TenantResponseCache
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient, UsageMeter
from engine.models import RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.fake_llm import MODEL, FakeLLM, Reply

pytestmark = pytest.mark.docker

#: The operator's key: it must never be readable inside a container.
REAL_KEY = "sk-scorebox-real-" + secrets.token_hex(12)


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    settings = docker_settings.model_copy(update={"max_parallel_jobs": 4, "job_max_rows": 2})
    with SandboxRunner(settings) as runner:
        yield runner


def make_gateway(fake_llm: FakeLLM, base: Settings, **overrides: Any) -> ModelGateway:
    settings = fake_llm.settings(base, llm_api_key=REAL_KEY, **overrides)
    cache = TenantResponseCache(MemoryResponseCache())
    return ModelGateway(MeteredClient(create_llm_client(settings, cache=cache)), settings)


def score(
    runner: SandboxRunner,
    gateway: ModelGateway,
    source: str,
    rows: list[dict[str, Any]],
    *,
    tenant: str = "tenant-a",
    run: str = "run-1",
    meter: UsageMeter | None = None,
) -> list[RowResult]:
    with gateway_session(gateway.session(tenant, run, meter)):
        return runner.run_check(CodeCheck(source), rows)


# Seed 002's judge (Fireworks "LLM as a judge"), its body unchanged but for the signature:
# binding ``messages`` and dict returns come with the scorer formats.
SEED_002 = '''
from openai import OpenAI
import os

def evaluate(model_output, scenario_input):
    messages = [{"role": "user", "content": scenario_input},
                {"role": "assistant", "content": model_output}]
    criteria = None
    kwargs = {}
    client = OpenAI(api_key=os.getenv("OPENAI_API_KEY"))
    conversation_history = messages[:-1]
    result_to_evaluate = messages[-1]
    if criteria is None:
        criteria = """
Please evaluate the quality of the assistant's response based on:
1. Accuracy: Is the information correct?
2. Helpfulness: Does it address the user's question?
Provide a score from 1-10 (10 being best) and explain your reasoning.
"""
    judge_messages = [
        {"role": "system", "content": "You are an expert evaluator. Your job is to objectively assess the quality of AI assistant responses."},
        {"role": "user", "content": f"""Here is a conversation and a response to evaluate:
CONVERSATION HISTORY:
{format_conversation(conversation_history)}
RESPONSE TO EVALUATE:
{result_to_evaluate['content']}
EVALUATION CRITERIA:
{criteria}
Please respond in the following format:
Score: [1-10]
Reasoning: [Your detailed explanation]
"""},
    ]
    response = client.chat.completions.create(
        model="gpt-4o",
        messages=judge_messages,
        temperature=kwargs.pop('temperature', 0.3),
        **kwargs,
    )
    judgment_text = response.choices[0].message.content
    score, reasoning = parse_judgment(judgment_text)
    return score, reasoning

def format_conversation(messages):
    if not messages:
        return "[No prior conversation]"
    formatted = []
    for msg in messages:
        formatted.append(f"{msg['role'].upper()}: {msg['content']}")
    return "\\n\\n".join(formatted)

def parse_judgment(text):
    lines = text.strip().split('\\n')
    score = None
    reasoning = ""
    for i, line in enumerate(lines):
        if line.startswith("Score:"):
            score_text = line.replace("Score:", "").strip()
            try:
                score = float(score_text.split('/')[0].strip())
            except ValueError:
                score = None
        elif line.startswith("Reasoning:"):
            reasoning = line.replace("Reasoning:", "").strip()
            if i + 1 < len(lines):
                reasoning += "\\n" + "\\n".join(lines[i+1:])
            break
    if score is None:
        score = 5.0
    if not reasoning:
        reasoning = text
    return score, reasoning
'''

# Seed 000's score_llm (Cohere cookbook) with ``co = cohere.Client()``, wrapped in an evaluate.
SEED_000 = '''
import re
import cohere

co = cohere.Client()
co_model = "command-r"

grading_prompt_template = """You are an AI grader that given a prompt, a completion, and a criterion, grades the completion based on the prompt and criterion.

PROMPT:
{prompt}

COMPLETION:
{completion}

CRITERION:
{criteria}

Do not provide an explanation or respond with additional text. Only respond with the final score in the format SCORE: <final_score>

SCORE:"""

criteria_completeness = """Please judge the above completion on whether or not all the completion fully addresses the task posed in the prompt. Please return a grade between 1 and 5."""


def score_llm(prompt: str, completion: str, criteria: str) -> int:
    grading_prompt = grading_prompt_template.format(
        prompt=prompt, completion=completion, criteria=criteria
    )
    completion = co.chat(message=grading_prompt, model=co_model, temperature=0.2).text
    score = float(re.search(r"[12345]", completion).group()) / 5
    return score


def evaluate(model_output, scenario_input):
    return score_llm(scenario_input, model_output, criteria_completeness)
'''

# Seed 004's eval_summary (Gemini chat, then the enum) with ``client = genai.Client()``.
SEED_004 = '''
import enum
from google import genai
from google.genai import types

client = genai.Client()

SUMMARY_PROMPT = """# Instruction
You are an expert evaluator. Evaluate the quality of the summary.

## Rating Rubric
5: (Very good). 4: (Good). 3: (Ok). 2: (Bad). 1: (Very bad).

### Prompt
{prompt}

## AI-generated Response
{response}
"""

class SummaryRating(enum.Enum):
  VERY_GOOD = '5'
  GOOD = '4'
  OK = '3'
  BAD = '2'
  VERY_BAD = '1'

def eval_summary(prompt, ai_response):
  """Evaluate the generated summary against the prompt used."""

  chat = client.chats.create(model='gemini-2.0-flash')

  # Generate the full text response.
  response = chat.send_message(
      message=SUMMARY_PROMPT.format(prompt=prompt, response=ai_response)
  )
  verbose_eval = response.text

  # Coerce into the desired structure.
  structured_output_config = types.GenerateContentConfig(
      response_mime_type="text/x.enum",
      response_schema=SummaryRating,
  )
  response = chat.send_message(
      message="Convert the final score.",
      config=structured_output_config,
  )
  structured_eval = response.parsed

  return verbose_eval, structured_eval


def evaluate(model_output, scenario_input):
  text_eval, struct_eval = eval_summary(prompt=scenario_input, ai_response=model_output)
  return int(struct_eval.value), text_eval
'''

CALL_OPENAI = """
from openai import OpenAI

def evaluate(model_output):
    reply = OpenAI().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": model_output}]
    )
    return reply.choices[0].message.content.strip() == "yes"
"""


def test_seed_002_judge_calls_openai_through_the_gateway(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("Score: 8\nReasoning: accurate and helpful")
    gateway = make_gateway(fake_llm, docker_settings, llm_model_map={"gpt-4o": "judge-large"})
    meter = UsageMeter()
    [result] = score(
        runner, gateway, SEED_002,
        [{"model_output": "Paris.", "scenario_input": "Capital of France?"}], meter=meter,
    )  # fmt: skip
    assert result.status is Status.OK, result.error
    assert result.score == 8.0
    assert result.explanation == "accurate and helpful"
    sent = fake_llm.requests[-1]
    assert sent["model"] == "judge-large"  # the operator's model map, not the check's name
    assert "Capital of France?" in sent["messages"][1]["content"]
    assert result.model == "judge-large"  # the row records which model served it
    assert meter.snapshot().calls == 1  # the run's llm_usage includes the gateway's spend


def test_seed_000_cohere_client(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("SCORE: 4")
    gateway = make_gateway(fake_llm, docker_settings)
    [result] = score(
        runner, gateway, SEED_000, [{"model_output": "A summary.", "scenario_input": "Summarise."}]
    )
    assert result.status is Status.OK, result.error
    assert result.score == pytest.approx(0.8)
    assert fake_llm.requests[-1]["temperature"] == 0.2
    assert result.model == MODEL


def test_seed_004_gemini_chat_and_enum(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("STEP 1: grounded and concise. Rating: 4")
    fake_llm.reply('{"value": "4"}')
    gateway = make_gateway(fake_llm, docker_settings)
    [result] = score(
        runner, gateway, SEED_004, [{"model_output": "Short summary.", "scenario_input": "Doc."}]
    )
    assert result.status is Status.OK, result.error
    assert result.score == 4
    assert result.explanation == "STEP 1: grounded and concise. Rating: 4"
    second = fake_llm.requests[-1]
    # The chat resent its history, and the enum was asked for as a JSON schema.
    contents = [m["content"] for m in second["messages"]]
    assert "STEP 1: grounded and concise. Rating: 4" in contents
    assert "Convert the final score." in contents
    schema = second["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["value"]["enum"] == ["5", "4", "3", "2", "1"]


def test_an_enum_reply_that_fits_no_value_is_an_error_in_the_check(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("fine")
    fake_llm.reply('{"value": "9"}')
    gateway = make_gateway(fake_llm, docker_settings)
    [result] = score(
        runner, gateway, SEED_004, [{"model_output": "s", "scenario_input": "d"}], run="enum-bad"
    )
    assert result.status is Status.ERROR
    assert result.error is not None and "none of the allowed values" in result.error


HUNT = """
import os

KEY = %r

def evaluate(model_output):
    from openai import OpenAI
    OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    where = []
    if any(KEY in v for v in os.environ.values()):
        where.append("environ")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    if KEY.encode() in f.read():
                        where.append(f"/proc/{pid}/{name}")
            except OSError:
                pass
    for top in ("/opt", "/etc", "/tmp", "/root", "/home", "/run", "/var"):
        for root, dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                try:
                    if os.path.getsize(path) > 2_000_000:
                        continue
                    with open(path, "rb") as f:
                        if KEY.encode() in f.read():
                            where.append(path)
                except OSError:
                    pass
    return (not where, ",".join(where) or "nowhere")
"""


def test_a_check_hunting_for_the_real_key_finds_nothing(
    docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("ok")
    gateway = make_gateway(fake_llm, docker_settings)
    # The hunt reads every file under the image's trees: under gVisor on a loaded machine
    # that outlasts the default 5 s a row. What it finds is the test, not how fast.
    limits = docker_settings.limits.model_copy(update={"row_timeout_seconds": 120.0})
    settings = docker_settings.model_copy(update={"limits": limits})
    with SandboxRunner(settings) as runner:
        [result] = score(runner, gateway, HUNT % REAL_KEY, [{"model_output": "x"}], run="hunt")
    assert result.status is Status.OK, result.error
    assert result.score is True, f"the real key was readable in: {result.explanation}"
    # The host did use the real key upstream while the check looked for it.
    assert fake_llm.requests, "the check's call reached the upstream"


def test_cache_hits_within_a_tenant_never_across(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda body: Reply(text="yes")
    gateway = make_gateway(fake_llm, docker_settings)
    rows = [{"model_output": "same prompt"}, {"model_output": "same prompt"}]
    first = score(runner, gateway, CALL_OPENAI, rows, tenant="tenant-a", run="c1")
    assert [r.status for r in first] == [Status.OK, Status.OK]
    assert len(fake_llm.requests) == 1  # two rows, one upstream call
    again = score(runner, gateway, CALL_OPENAI, rows[:1], tenant="tenant-a", run="c2")
    assert again[0].status is Status.OK and len(fake_llm.requests) == 1  # another run: a hit
    other = score(runner, gateway, CALL_OPENAI, rows[:1], tenant="tenant-b", run="c3")
    assert other[0].status is Status.OK
    assert len(fake_llm.requests) == 2  # another tenant never reads tenant-a's entry


def test_quota_zero_turns_the_gateway_off(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    gateway = make_gateway(fake_llm, docker_settings, quota_llm_tokens_per_run=0)
    [result] = score(runner, gateway, CALL_OPENAI, [{"model_output": "x"}], run="off")
    assert result.status is Status.ERROR
    assert result.error is not None and "llm_tokens_per_run" in result.error
    assert fake_llm.requests == []


def test_a_spent_quota_stops_further_calls(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    # The first call may take what is left of 200 tokens, and the upstream gives it all.
    fake_llm.responder = lambda body: Reply(text="abcd" * int(body["max_tokens"]))
    gateway = make_gateway(fake_llm, docker_settings, quota_llm_tokens_per_run=200)
    prompt = "a prompt long enough to cost more than five tokens " * 3
    rows = [{"model_output": prompt}, {"model_output": prompt + "again"}]
    first, second = score(runner, gateway, CALL_OPENAI, rows, run="spent")
    assert first.status is Status.OK, first.error
    assert second.status is Status.ERROR
    assert second.error is not None and "llm_tokens_per_run" in second.error
    assert len(fake_llm.requests) == 1


def test_an_upstream_that_is_down_is_a_judge_error(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    gateway = make_gateway(
        fake_llm, docker_settings, llm_base_url="http://127.0.0.1:9/v1", llm_max_retries=0
    )
    [result] = score(runner, gateway, CALL_OPENAI, [{"model_output": "x"}], run="down")
    assert result.status is Status.JUDGE_ERROR
    assert result.error is not None and "cannot connect" in result.error


def test_an_upstream_slower_than_the_row_bound_is_a_timeout(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    # The row timer is 5 s; a row that calls the model gets 7 s; the model takes 30 s.
    fake_llm.reply("yes", delay_seconds=30)
    gateway = make_gateway(
        fake_llm, docker_settings, gateway_row_timeout_seconds=7.0, llm_timeout_seconds=60
    )
    started = time.monotonic()
    [result] = score(runner, gateway, CALL_OPENAI, [{"model_output": "x"}], run="slow")
    assert result.status is Status.TIMEOUT, result.error
    assert result.error is not None and "SCOREBOX_GATEWAY_ROW_TIMEOUT_SECONDS" in result.error
    assert "7.0 s" in result.error
    assert time.monotonic() - started < 20  # the row did not wait for the upstream


def test_a_row_may_take_longer_than_row_timeout_while_the_model_answers(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    # Default row_timeout_seconds is 5; the model takes 6 s; the gateway's bound is 60 s.
    fake_llm.reply("yes", delay_seconds=6)
    gateway = make_gateway(fake_llm, docker_settings, llm_timeout_seconds=20)
    [result] = score(runner, gateway, CALL_OPENAI, [{"model_output": "x"}], run="patient")
    assert result.status is Status.OK, result.error


def test_eight_rows_in_parallel_all_call_the_model(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    arrivals: list[float] = []

    def slow(body: dict[str, Any]) -> Reply:
        arrivals.append(time.monotonic())
        return Reply(text="yes", delay_seconds=1.0)

    fake_llm.responder = slow
    gateway = make_gateway(fake_llm, docker_settings)
    rows = [{"model_output": f"row {i}"} for i in range(8)]
    results = score(runner, gateway, CALL_OPENAI, rows, run="eight")
    assert [r.status for r in results] == [Status.OK] * 8, [r.error for r in results]
    assert all(r.score is True for r in results)
    assert len(fake_llm.requests) == 8
    # Calls from different containers were in flight at the same time (each takes 1 s).
    overlap = max(sum(1 for t in arrivals if s <= t < s + 1.0) for s in arrivals)
    assert overlap >= 2, arrivals


def test_without_a_session_the_check_is_told_how_to_configure_a_model(
    runner: SandboxRunner,
) -> None:
    [result] = runner.run_check(CodeCheck(CALL_OPENAI), [{"model_output": "x"}])
    assert result.status is Status.ERROR
    assert result.error is not None and "SCOREBOX_LLM_BASE_URL" in result.error


def _published_seed_002() -> str:
    """Seed 002's reward function exactly as published (the Fireworks docs' "LLM as a judge"
    code block), read from ``../shared/seeds`` beside the checkout as CI has it."""
    root = Path(__file__).resolve().parents[2]
    for base in (root.parent / "shared" / "seeds", root.parents[1] / "shared" / "seeds"):
        for path in sorted(base.glob("002_*.txt")):
            text = path.read_text(encoding="utf-8")
            return text.split("```python\n", 1)[1].split("```", 1)[0]
    if os.environ.get("CI") == "true":
        pytest.fail("../shared/seeds/002_*.txt is not beside this checkout (CI has it)")
    pytest.skip("../shared/seeds is not beside this checkout")


def test_seed_002_as_published_with_one_import_line(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    """The published reward function plus ``from reward_kit import reward_function``: its
    ``messages`` come from the row, ``criteria`` takes its default, ``**kwargs`` gets none of
    scorebox's names (it forwards them into ``chat.completions.create``), and its dict return
    gives the score, ``reasoning`` as the explanation and the other keys as metadata."""
    source = "from reward_kit import reward_function\n" + _published_seed_002()
    fake_llm.reply("Score: 7\nReasoning: correct but terse")
    gateway = make_gateway(fake_llm, docker_settings)
    messages = [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
    ]
    [result] = score(runner, gateway, source, [{"model_output": "Paris.", "messages": messages}])
    assert result.status is Status.OK, result.error
    assert result.score == 7.0
    assert result.explanation == "correct but terse"
    assert result.metadata is not None
    assert result.metadata["raw_response"] == "Score: 7\nReasoning: correct but terse"
    sent = fake_llm.requests[-1]
    assert sent["model"] == MODEL  # gpt-4o served by the operator's configured model
    assert sent["temperature"] == 0.3
    assert "USER: What is the capital of France?" in sent["messages"][1]["content"]
    assert "RESPONSE TO EVALUATE:\nParis." in sent["messages"][1]["content"]
    assert not {"model_output", "scenario_input", "metadata"} & set(sent)
