"""The one table of scorer formats, assembled from each format's module, and the sets the
validator, the harness and the generator read from it. Carried into the sandbox image
(stdlib only).

A new format is a module beside these holding its ``SPEC`` and ``ADAPTER``, a member of
:class:`~engine.contract.formats.spec.Format`, and a line below.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.contract.formats import braintrust, grader, langsmith, okareo, promptfoo, reward_kit
from engine.contract.formats.spec import Format, FormatAdapter, FormatSpec
from engine.contract.params import PARAMETER_NAMES

#: Each format's adapter, in the order detection tries their entry names.
ADAPTERS: Mapping[Format, FormatAdapter] = {
    module.ADAPTER.format: module.ADAPTER
    for module in (okareo, reward_kit, grader, promptfoo, braintrust, langsmith)
}

#: Each format's spec: what the validator, the harness, the generator's prompts and
#: docs/writing-checks/formats.md read.
FORMATS: Mapping[Format, FormatSpec] = {fmt: adapter.spec for fmt, adapter in ADAPTERS.items()}

#: Stand-in modules in the sandbox image for other tools' packages (top-level import name);
#: ``sandbox_images/python/stand-in-modules/``. A check's declared real package wins.
STAND_IN_MODULES: tuple[str, ...] = (
    "reward_kit",
    "eval_protocol",
    "langsmith",
    "phoenix",
    "braintrust",
)

#: Row fields a row may carry for other formats (besides Okareo's PARAMETER_NAMES).
FORMAT_ROW_FIELDS: tuple[str, ...] = (
    "messages",
    "item",
    "sample",
    "vars",
    "ground_truth",
    "output",
)
#: Every field a job's row may carry besides its id: Okareo's parameters, then the other
#: formats' own fields. The harness reads a job's columns by these names; the host's
#: ``engine.models.Row`` has the same fields (tests/unit/test_row_columns.py holds it).
ROW_FIELDS: tuple[str, ...] = (*PARAMETER_NAMES, *FORMAT_ROW_FIELDS)

#: Formats the generator writes (``--format``), in the order it offers them.
GENERATOR_FORMATS: tuple[Format, ...] = (
    Format.GRADER,
    Format.PROMPTFOO,
    Format.REWARD_KIT,
    Format.OKAREO,
)


def _where(flag: str) -> frozenset[Format]:
    return frozenset(f for f, spec in FORMATS.items() if getattr(spec, flag))


#: Formats whose tools pass the task's output as it was returned (a dict, a list, a
#: number): their ``output`` is :func:`~engine.contract.formats.rows.output_of`.
STRUCTURED_OUTPUT_FORMATS: frozenset[Format] = _where("structured_output")
#: Formats whose tools await an ``async def`` entry.
ASYNC_FORMATS: frozenset[Format] = _where("async_entry")
#: Formats whose entries take the check's configuration as keyword parameters.
CONFIGURED_BY_KEYWORD: frozenset[Format] = _where("configured_by_keyword")
#: Formats the generator vets and runs under the standard policy (they import a stand-in).
STANDARD_POLICY_FORMATS: frozenset[Format] = _where("standard_policy")
#: Formats whose checks may report a row ``skipped`` themselves (the host accepts it).
SELF_SKIPPING: frozenset[Format] = _where("none_skips")
