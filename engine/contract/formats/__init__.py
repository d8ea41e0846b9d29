"""Other tools' scorer formats, as data: entry points, parameters, bindings, return shapes.

One module per format holds its spec, its binding and its coercion
(:mod:`.okareo`, :mod:`.reward_kit`, :mod:`.grader`, :mod:`.promptfoo`,
:mod:`.braintrust` for Braintrust and Phoenix, :mod:`.langsmith`); :mod:`.table` assembles
them into :data:`FORMATS`, the one table the validator, the harness, the generator's
prompts and docs/writing-checks/formats.md read. The generic pieces are by idea:
:mod:`.spec` (what a format is), :mod:`.shapes` (a file's functions from its ``ast``),
:mod:`.detection` (which format and entry, what each parameter receives), :mod:`.calls`
(binding a row, skipping, coercing a return value), :mod:`.rows` and :mod:`.results`
(what the formats share).

Pure, and carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

from engine.contract.formats.calls import bind, coerce, skips
from engine.contract.formats.detection import (
    Detected,
    bindings_of,
    detect,
    fits,
    format_of_source,
)
from engine.contract.formats.results import MAX_METADATA_CHARS, bounded_metadata, jsonable
from engine.contract.formats.rows import Record, messages_of, output_of
from engine.contract.formats.shapes import FunctionShape, Param, shapes_of
from engine.contract.formats.spec import Format, FormatAdapter, FormatError, FormatSpec
from engine.contract.formats.table import (
    ADAPTERS,
    ASYNC_FORMATS,
    CONFIGURED_BY_KEYWORD,
    FORMAT_ROW_FIELDS,
    FORMATS,
    GENERATOR_FORMATS,
    SELF_SKIPPING,
    STAND_IN_MODULES,
    STANDARD_POLICY_FORMATS,
    STRUCTURED_OUTPUT_FORMATS,
)

__all__ = [
    "ADAPTERS",
    "ASYNC_FORMATS",
    "CONFIGURED_BY_KEYWORD",
    "FORMATS",
    "FORMAT_ROW_FIELDS",
    "GENERATOR_FORMATS",
    "MAX_METADATA_CHARS",
    "SELF_SKIPPING",
    "STANDARD_POLICY_FORMATS",
    "STAND_IN_MODULES",
    "STRUCTURED_OUTPUT_FORMATS",
    "Detected",
    "Format",
    "FormatAdapter",
    "FormatError",
    "FormatSpec",
    "FunctionShape",
    "Param",
    "Record",
    "bind",
    "bindings_of",
    "bounded_metadata",
    "coerce",
    "detect",
    "fits",
    "format_of_source",
    "jsonable",
    "messages_of",
    "output_of",
    "shapes_of",
    "skips",
]
