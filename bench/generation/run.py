"""Generation benchmark: how often does the generator hand back a check that is right?

For each case the generator sees the description and the labelled examples; the
case is accepted when the returned check validates under the restricted policy and
agrees with every held-back row (run in the sandbox). Prints a table and the
acceptance rate. The LLM is the one in SCOREBOX_LLM_* (or OPENAI_*).

    python -m bench.generation                 # against the configured endpoint
    python -m bench.generation --self-test     # fake server replaying reference checks
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from bench.generation.cases import CASES, Case
from engine.contract import OutputType
from engine.errors import ScoreboxError
from engine.llm.client import LLMClient
from engine.llm.openai_client import create_llm_client
from engine.models import Row
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings
from generator.adapters import engine_runner
from generator.pipeline import GeneratorOptions, generate_check
from generator.verdicts import agrees


@dataclass
class CaseOutcome:
    id: str
    output_data_type: str
    generator_accepted: bool
    attempts: int
    examples: str  # "passed/total"
    held_out: str  # "passed/total"
    accepted: bool
    seconds: float
    error: str | None = None


def run_case(
    case: Case, llm: LLMClient, runner: SandboxRunner, options: GeneratorOptions
) -> CaseOutcome:
    """Generate the case's check, then score it on the held-back rows."""
    started = time.monotonic()
    run = engine_runner(runner)
    held_total = len(case.held_out)
    try:
        result = generate_check(
            case.description,
            requires_scenario_input=case.requires_scenario_input,
            requires_scenario_result=case.requires_scenario_result,
            output_data_type=case.output_data_type,
            examples=case.examples,
            llm=llm,
            run=run,
            options=options,
        )
    except ScoreboxError as exc:
        return CaseOutcome(
            case.id,
            case.output_data_type,
            False,
            0,
            "-",
            f"0/{held_total}",
            False,
            time.monotonic() - started,
            f"{type(exc).__name__}: {exc}",
        )
    held_passed = 0
    valid = result.code is not None and result.report is not None and result.report.valid
    if valid and result.code is not None:
        rows = [Row.model_validate(h["row"]) for h in case.held_out]
        scored = run(result.code, OutputType(case.output_data_type), rows)
        held_passed = sum(
            agrees(h["expected"], r, options.tolerance)
            for h, r in zip(case.held_out, scored, strict=True)
        )
    return CaseOutcome(
        id=case.id,
        output_data_type=case.output_data_type,
        generator_accepted=result.accepted,
        attempts=len(result.attempts),
        examples=f"{result.agreement.passed}/{result.agreement.total}",
        held_out=f"{held_passed}/{held_total}",
        accepted=valid and held_passed == held_total,
        seconds=time.monotonic() - started,
    )


def render_table(outcomes: Sequence[CaseOutcome]) -> str:
    """A fixed-width table and the acceptance rate."""
    header = (
        f"{'case':28} {'type':5} {'gen':4} {'tries':>5} {'examples':>8} {'held-out':>8} "
        f"{'result':8} {'s':>6}"
    )
    lines = [header, "-" * len(header)]
    for o in outcomes:
        lines.append(
            f"{o.id[:28]:28} {o.output_data_type:5} {'yes' if o.generator_accepted else 'no':4} "
            f"{o.attempts:>5} {o.examples:>8} {o.held_out:>8} "
            f"{'ACCEPT' if o.accepted else 'reject':8} {o.seconds:>6.1f}"
            + (f"  {o.error}" if o.error else "")
        )
    n = len(outcomes)
    accepted = sum(o.accepted for o in outcomes)
    tries = sum(o.attempts for o in outcomes) / n if n else 0.0
    rate = 100.0 * accepted / n if n else 0.0
    lines.append("-" * len(header))
    lines.append(f"acceptance rate: {accepted}/{n} = {rate:.1f}%   mean attempts: {tries:.2f}")
    return "\n".join(lines)


@contextmanager
def _self_test_llm(settings: Settings, cases: Sequence[Case]) -> Iterator[Settings]:
    """A local fake OpenAI-compatible server answering each case with its reference check."""
    from tests.fake_llm import FakeLLM, Reply

    references = {case.description: case.reference for case in cases}

    def respond(body: dict[str, Any]) -> Reply:
        task = body["messages"][1]["content"]
        for description, code in references.items():
            if description in task:
                return Reply(text=f"Here you are.\n\n```python\n{code}```\n")
        return Reply(text="I do not know this case.")

    server = FakeLLM().start()
    server.responder = respond
    try:
        yield server.settings(settings)
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generation", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="use a local fake LLM that replays the reference checks (measures nothing "
        "about any model; proves the suite and the pipeline work)",
    )
    parser.add_argument("--only", default=None, help="run the cases whose id contains this")
    parser.add_argument(
        "--max-attempts", type=int, default=None, help="default: SCOREBOX_GENERATOR_MAX_ATTEMPTS"
    )
    parser.add_argument("--jobs", type=int, default=4, help="cases generated in parallel")
    parser.add_argument("--json", dest="json_path", default=None, help="also write results here")
    args = parser.parse_args(argv)

    cases = [c for c in CASES if args.only is None or args.only in c.id]
    settings = Settings()
    options = GeneratorOptions.from_settings(settings)
    if args.max_attempts is not None:
        options = GeneratorOptions(**{**asdict(options), "max_attempts": args.max_attempts})

    with _maybe_self_test(args.self_test, settings, cases) as effective:
        try:
            llm = create_llm_client(effective)
        except ScoreboxError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        model = options.model or effective.llm_model
        print(
            f"endpoint {effective.llm_base_url or 'https://api.openai.com/v1'}  model {model}  "
            f"cases {len(cases)}  max attempts {options.max_attempts}"
            + ("  [SELF-TEST: reference answers, measures nothing]" if args.self_test else ""),
            file=sys.stderr,
        )
        with (
            SandboxRunner(effective.model_copy(update={"pool_size": 0})) as runner,
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
        ):
            outcomes = list(pool.map(lambda c: run_case(c, llm, runner, options), cases))
    print(render_table(outcomes))
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump([asdict(o) for o in outcomes], fh, indent=2)
    return 0


@contextmanager
def _maybe_self_test(
    enabled: bool, settings: Settings, cases: Sequence[Case]
) -> Iterator[Settings]:
    if not enabled:
        yield settings
        return
    with _self_test_llm(settings, cases) as patched:
        yield patched


if __name__ == "__main__":
    raise SystemExit(main())
