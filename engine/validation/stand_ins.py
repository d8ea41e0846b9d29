"""What each stand-in module in the sandbox image holds, and which distribution is real.

The image carries small stand-ins for other tools' packages
(``sandbox_images/python/stand-in-modules/``), so a scorer file that imports their types
and decorators loads unchanged. :data:`SURFACES` lists each stand-in module and the
names it holds (a test holds it equal to the files); the validator refuses an import
beyond it with a message naming the real distribution (:data:`DISTRIBUTIONS`) to declare.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Import name (or a package's subpackage) -> the PyPI distribution that provides it, read
#: from the real wheels' metadata (``top_level.txt`` or ``RECORD``): reward-kit 0.4.1,
#: eval-protocol 0.3.33, langsmith 0.14.17, braintrust 0.48.1; ``phoenix`` is a namespace
#: that three distributions fill (``phoenix/evals/`` in arize-phoenix-evals 3.9.4's RECORD,
#: ``phoenix/client/`` in arize-phoenix-client 3.5.0's, the rest in arize-phoenix); the
#: ``phoenix`` distribution on PyPI is another project.
DISTRIBUTIONS: Mapping[str, str] = {
    "reward_kit": "reward-kit",
    "eval_protocol": "eval-protocol",
    "langsmith": "langsmith",
    "phoenix": "arize-phoenix",
    "phoenix.evals": "arize-phoenix-evals",
    "phoenix.client": "arize-phoenix-client",
    "braintrust": "braintrust",
}


def distribution_of(module: str) -> str | None:
    """The distribution that provides ``module`` (dotted), or None when no stand-in's."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = DISTRIBUTIONS.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


_REWARD_KIT_MODELS = frozenset({"EvaluateResult", "Message", "MetricResult", "StepOutput"})

#: Stand-in module (dotted) -> the public names it holds.
SURFACES: Mapping[str, frozenset[str]] = {
    "reward_kit": _REWARD_KIT_MODELS | {"RewardFunction", "reward_function"},
    "reward_kit.models": _REWARD_KIT_MODELS,
    "reward_kit.typed_interface": frozenset({"reward_function"}),
    "reward_kit.reward_function": frozenset({"RewardFunction", "reward_function"}),
    "eval_protocol": _REWARD_KIT_MODELS | {"RewardFunction", "reward_function"},
    "eval_protocol.models": _REWARD_KIT_MODELS,
    "eval_protocol.typed_interface": frozenset({"reward_function"}),
    "eval_protocol.reward_function": frozenset({"RewardFunction", "reward_function"}),
    "langsmith": frozenset({"traceable", "wrappers", "evaluation", "schemas"}),
    "langsmith.wrappers": frozenset({"wrap_openai", "wrap_anthropic"}),
    "langsmith.evaluation": frozenset({"EvaluationResult", "EvaluationResults"}),
    "langsmith.schemas": frozenset({"Example", "Run"}),
    "phoenix": frozenset({"experiments", "evals"}),
    "phoenix.experiments": frozenset({"evaluators", "types"}),
    "phoenix.experiments.evaluators": frozenset({"create_evaluator"}),
    "phoenix.experiments.types": frozenset({"EvaluationResult"}),
    "phoenix.evals": frozenset({"Score", "create_evaluator"}),
    "braintrust": frozenset({"Score", "traced", "wrap_openai"}),
}


def beyond(module: str, names: tuple[str, ...] | list[str]) -> str | None:
    """What of ``from module import names`` (or ``import module``) the stand-ins lack, or
    None when they hold it all (or ``module`` is not a stand-in's)."""
    top = module.split(".", maxsplit=1)[0]
    if top not in DISTRIBUTIONS:
        return None
    held = SURFACES.get(module)
    if held is None:
        return f"`{module}`"
    missing = [n for n in names if n not in held and f"{module}.{n}" not in SURFACES]
    if not missing:
        return None
    return ", ".join(f"`{module}.{n}`" for n in missing)
