"""The host's half of the check contract: what helps people write checks.

:mod:`engine.contract` is copied into the sandbox image and holds what the harness
needs to run a check; this module holds what only the host uses (the validator,
the generator's prompts, the image build): parameter docs and suggestions, the
annotations a score may carry, the packages the image provides and the modules
that cannot work there, model-check templates, and the size cap of a check file.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.contract import CHECK_BASE_MODULES, PARAMETER_NAMES, REQUIRABLE_PARAMETERS, OutputType
from engine.contract.formats import FORMATS, STAND_IN_MODULES, Format

#: Largest accepted check source, in bytes (UTF-8).
MAX_SOURCE_BYTES = 256 * 1024


#: What each parameter holds, used in error messages and the generator's prompts.
PARAMETER_DOCS: Mapping[str, str] = {
    "model_output": "str: the output of the model under evaluation (always present)",
    "scenario_input": "the input of the scenario (str, or JSON value); may be absent",
    "scenario_result": "the expected result of the scenario (str, or JSON value); may be absent",
    "metadata": "dict: free-form metadata of the row (empty dict when absent)",
    "model_input": "str or None: the exact input sent to the model",
}


#: Return annotations naming a score type.
ANNOTATION_OUTPUT_TYPES: Mapping[str, OutputType] = {
    "bool": OutputType.BOOL,
    "int": OutputType.INT,
    "float": OutputType.FLOAT,
}


#: Return annotations that wrap a score without saying which type it is.
WRAPPER_ANNOTATIONS: frozenset[str] = frozenset({"CheckResponse", "tuple", "Tuple"})


#: Return annotations (last dotted part) that can never be a score.
NON_SCORE_ANNOTATIONS: frozenset[str] = frozenset(
    {
        "str",
        "bytes",
        "bytearray",
        "complex",
        "list",
        "List",
        "set",
        "Set",
        "frozenset",
        "FrozenSet",
        "Sequence",
        "Iterable",
        "Iterator",
        "Generator",
        "Callable",
        "NoReturn",
        "Never",
    }
)


#: Modules that import fine but cannot work in the sandbox (no network, no
#: subprocesses): a ``standard`` check importing them gets a warning.
SANDBOX_UNUSABLE_MODULES: Mapping[str, str] = {
    "socket": "the sandbox has no network",
    "ssl": "the sandbox has no network",
    "http": "the sandbox has no network",
    "urllib": "the sandbox has no network",
    "requests": "the sandbox has no network",
    "httpx": "the sandbox has no network",
    "aiohttp": "the sandbox has no network",
    "ftplib": "the sandbox has no network",
    "smtplib": "the sandbox has no network",
    "subprocess": "the sandbox allows only a few processes and has no tools to run",
    "multiprocessing": "the sandbox allows only a few processes",
    "asyncio.subprocess": "the sandbox allows only a few processes and has no tools to run",
}


#: HTTP and socket client libraries a check may not import, even declared: the sandbox
#: has no network, and the image carries some of them only for its model clients. A
#: check's one endpoint is the model gateway, reached through those clients.
NETWORK_CLIENT_MODULES: frozenset[str] = frozenset(
    {"requests", "httpx", "httpx2", "httpcore", "httpcore2", "aiohttp", "urllib3", "websockets"}
)

#: The model clients a check uses to reach the model gateway.
GATEWAY_CLIENTS: tuple[str, ...] = ("openai", "cohere", "google.genai")


def network_client(module: str) -> str | None:
    """The network client library ``module`` belongs to (top-level name), or None."""
    top = module.split(".", maxsplit=1)[0]
    return top if top in NETWORK_CLIENT_MODULES else None


@dataclass(frozen=True)
class SandboxPackage:
    """A third-party package importable inside the sandbox image."""

    import_name: str
    debian_package: str | None  # installed from Debian when set
    wheel: str | None = None  # otherwise downloaded on the host as a wheel
    #: The wheel's pinned version; None: the host's installed version (unpinned without one).
    version: str | None = None


#: Third-party packages the sandbox image provides (the image build reads this).
SANDBOX_PACKAGES: tuple[SandboxPackage, ...] = (
    SandboxPackage("numpy", "python3-numpy"),
    SandboxPackage("scipy", "python3-scipy"),
    SandboxPackage("pandas", "python3-pandas"),
    SandboxPackage("sklearn", "python3-sklearn"),
    SandboxPackage("sympy", "python3-sympy"),
    SandboxPackage("regex", "python3-regex"),
    SandboxPackage("jsonschema", "python3-jsonschema"),
    SandboxPackage("yaml", "python3-yaml"),
    SandboxPackage("nltk", "python3-nltk"),
    SandboxPackage("Levenshtein", "python3-levenshtein"),
    SandboxPackage("RestrictedPython", None, wheel="RestrictedPython"),
    SandboxPackage("rapidfuzz", None, wheel="rapidfuzz"),
    # Model clients, configured by the image's environment to reach the model only
    # through the sandbox's gateway, with what they import. Pinned at the version named
    # here, else at the host's (the openai SDK's tree is the host's own).
    SandboxPackage("openai", None, wheel="openai"),
    SandboxPackage("cohere", None, wheel="cohere", version="7.3.1"),
    SandboxPackage("google", None, wheel="google-genai", version="3.6.1"),
    SandboxPackage("google.auth", None, wheel="google-auth", version="2.63.0"),
    SandboxPackage("httpx", None, wheel="httpx"),
    SandboxPackage("httpcore", None, wheel="httpcore"),
    SandboxPackage("httpx2", None, wheel="httpx2", version="2.16.2"),
    SandboxPackage("httpcore2", None, wheel="httpcore2", version="2.16.2"),
    SandboxPackage("h11", None, wheel="h11"),
    SandboxPackage("anyio", None, wheel="anyio"),
    SandboxPackage("sniffio", None, wheel="sniffio"),
    SandboxPackage("idna", None, wheel="idna"),
    SandboxPackage("certifi", None, wheel="certifi"),
    SandboxPackage("distro", None, wheel="distro", version="1.9.0"),
    SandboxPackage("jiter", None, wheel="jiter"),
    SandboxPackage("pydantic", None, wheel="pydantic"),
    SandboxPackage("pydantic_core", None, wheel="pydantic_core"),
    SandboxPackage("annotated_types", None, wheel="annotated_types"),
    SandboxPackage("typing_extensions", None, wheel="typing_extensions"),
    SandboxPackage("typing_inspection", None, wheel="typing_inspection"),
    SandboxPackage("requests", None, wheel="requests"),
    SandboxPackage("urllib3", None, wheel="urllib3"),
    SandboxPackage("charset_normalizer", None, wheel="charset_normalizer"),
    SandboxPackage("fastavro", None, wheel="fastavro", version="1.13.1"),
    SandboxPackage("tokenizers", None, wheel="tokenizers", version="0.23.3"),
    SandboxPackage("tenacity", None, wheel="tenacity", version="9.1.4"),
    SandboxPackage("websockets", None, wheel="websockets", version="17.4"),
    SandboxPackage("truststore", None, wheel="truststore", version="0.10.5"),
    SandboxPackage("click", None, wheel="click"),
)


def unusable_reason(module: str) -> str | None:
    """Why ``module`` cannot work in the sandbox, or None when it can."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        reason = SANDBOX_UNUSABLE_MODULES.get(".".join(parts[:i]))
        if reason is not None:
            return reason
    return None


def requires_from_parameters(parameters: Sequence[str]) -> dict[str, bool]:
    """``requires_scenario_input``/``requires_scenario_result`` implied by a signature."""
    return {f"requires_{name}": name in parameters for name in REQUIRABLE_PARAMETERS}


#: Placeholders a model check's prompt template may use; each is filled from the row.
MODEL_CHECK_PLACEHOLDERS: tuple[str, ...] = PARAMETER_NAMES


#: Legacy placeholder names (Okareo) accepted and rewritten to the current ones.
LEGACY_PLACEHOLDERS: Mapping[str, str] = {
    "generation": "model_output",
    "input": "scenario_input",
    "result": "scenario_result",
}


class ModelCheckType(StrEnum):
    """What the judge of a model check answers."""

    SCORE = "score"  # an integer score (1-5 unless the template says otherwise)
    # pass or fail (a bool score); bandit B105: a check type name, not a password
    PASS_FAIL = "pass_fail"  # nosec B105


def sandbox_can_import(module: str) -> bool:
    """Whether ``module`` (dotted) exists in the sandbox image: stdlib, a sandbox package,
    or a check base module (and its parent package)."""
    top = module.split(".", maxsplit=1)[0]
    if top in sys.stdlib_module_names:
        return True
    if any(top == package.import_name for package in SANDBOX_PACKAGES):
        return True
    if top in STAND_IN_MODULES:
        return True
    return any(base == module or base.startswith(module + ".") for base in CHECK_BASE_MODULES)


#: Names people (and LLMs) use for a contract parameter, mapped to the contract name.
PARAMETER_SUGGESTIONS: Mapping[str, str] = {
    **LEGACY_PLACEHOLDERS,
    "output": "model_output",
    "response": "model_output",
    "completion": "model_output",
    "prediction": "model_output",
    "answer": "model_output",
    "expected": "scenario_result",
    "expected_output": "scenario_result",
    "expected_result": "scenario_result",
    "reference": "scenario_result",
    "ground_truth": "scenario_result",
    "target": "scenario_result",
    "question": "scenario_input",
    "context": "scenario_input",
    "scenario": "scenario_input",
    "prompt": "model_input",
    "meta": "metadata",
}


def suggest_parameter(name: str) -> str | None:
    """The contract parameter ``name`` was probably meant to be, or None."""
    if name in PARAMETER_SUGGESTIONS:
        return PARAMETER_SUGGESTIONS[name]
    close = difflib.get_close_matches(name, PARAMETER_NAMES, n=1, cutoff=0.6)
    return close[0] if close else None


def format_table_markdown() -> str:
    """docs/writing-checks/formats.md's scorer-format table, from
    :data:`engine.contract.formats.FORMATS`."""
    lines = [
        "| format | entry | parameters (bound from the row) | returns | pass flag | "
        "differences from the tool |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for spec in FORMATS.values():
        if spec.format is Format.OKAREO:
            entry = "`evaluate`, or `evaluate` in a class `Check`"
        elif spec.decorator:
            entry = f"`@{spec.decorator}` (any name), with `**kwargs`"
        elif spec.entry_names:
            entry = ", ".join(f"`{n}`" for n in spec.entry_names)
            entry += " or the only public function that fits" if spec.positional is None else ""
        else:
            entry = "the only public function that fits"
        if spec.positional is not None:
            entry += f" ({spec.positional} parameters, passed by position)"
        params = "; ".join(f"`{n}`: {cell(m)}" for n, m in spec.parameters.items())
        returns = "; ".join(cell(r) for r in spec.returns)
        differences = "; ".join(cell(d) for d in spec.differences) or "none"
        flag = "yes" if spec.pass_flag else "bool scores only"
        lines.append(
            f"| {spec.title} (`{spec.format.value}`) | {entry} | {params} | {returns} | "
            f"{flag} | {differences} |"
        )
    return "\n".join(lines) + "\n"
