"""What a scorer format is: :class:`FormatSpec` (its data, read by people and the docs) and
:class:`FormatAdapter` (its behaviour: which functions fit, how a row binds, what a return
value means). Each format's module holds one of each; :mod:`.table` assembles them.

The generic drivers (:mod:`.detection`, :mod:`.calls`) read only these fields, never a
format's name. Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.contract.formats.shapes import FunctionShape
from engine.contract.params import EntrypointError
from engine.contract.returns import Score
from engine.contract.statuses import OutputType


class Format(StrEnum):
    """A scorer format scorebox runs unchanged."""

    OKAREO = "okareo"
    REWARD_KIT = "reward-kit"
    GRADER = "grader"
    PROMPTFOO = "promptfoo"
    #: Braintrust code scorers and Phoenix code evaluators bind the same names: one adapter.
    BRAINTRUST = "braintrust"
    LANGSMITH = "langsmith"


class FormatError(EntrypointError):
    """No entry, or several: the message says how to name one."""


@dataclass(frozen=True)
class FormatSpec:
    """One format: how its entry is found, what its parameters receive, what it may return."""

    format: Format
    title: str
    #: Function names that make a function this format's entry (besides a decorator).
    entry_names: tuple[str, ...]
    #: Parameter name -> what it is bound to (a sentence for people; the adapter binds it).
    parameters: Mapping[str, str]
    returns: tuple[str, ...]
    #: Where scorebox differs from the tool itself.
    differences: tuple[str, ...] = ()
    #: A class of this name is the entry (Okareo's ``Check``) and makes the file this format.
    entry_class: str | None = None
    #: A decorator that marks the entry (any name) and makes the file this format.
    decorator: str | None = None
    #: A decorator that marks the entry (any name) but leaves the format to its parameters
    #: (Phoenix's ``create_evaluator``).
    marker: str | None = None
    #: The entry must take ``**kwargs`` (reward-kit refuses functions without it).
    needs_var_keyword: bool = False
    #: The entry is called positionally with exactly this many parameters (names free).
    positional: int | None = None
    #: Whether its results carry a pass flag (then the check's pass rate uses it).
    pass_flag: bool = False
    #: A ``None`` return skips the row (status ``skipped``), as the tool itself does.
    none_skips: bool = False
    #: The tool awaits an ``async def`` entry (OpenAI graders and Okareo call theirs).
    async_entry: bool = False
    #: The tool passes the task's output as it was returned (a dict, a list, a number):
    #: the row's ``output``, else ``model_output`` parsed (:func:`.rows.output_of`).
    structured_output: bool = False
    #: The entry takes the check's configuration as keyword parameters.
    configured_by_keyword: bool = False
    #: Its files import a stand-in module (``reward_kit``), which the restricted policy's
    #: import allowlist does not hold: the generator vets and runs them under the standard
    #: policy (still in the sandbox).
    standard_policy: bool = False
    #: An entry found by one of :attr:`entry_names` is this format even when its parameters
    #: fit no format (then its bindings' error says what is wrong).
    name_decides: bool = True
    #: The order in which an entry found by another format's name is tried against this
    #: format by its parameter names (lower first); None: never.
    guess_rank: int | None = None
    #: A lone public function whose parameter names fit only this format is its entry.
    guessable: bool = False
    example: str = ""


#: Builds a ``Message`` object from a dict, for parameters annotated ``List[Message]``.
MessageFactory = Callable[[dict[str, Any]], Any]
#: Positional and keyword arguments for an entry.
Arguments = tuple[list[Any], dict[str, Any]]
Binder = Callable[
    [FunctionShape, Mapping[str, Any], MessageFactory | None, Mapping[str, Any] | None],
    Arguments,
]


def _never(*_: Any) -> bool:
    return False


def _none(_: FunctionShape) -> dict[str, str] | None:
    return None


@dataclass(frozen=True)
class FormatAdapter:
    """A format's behaviour beside its :class:`FormatSpec`."""

    spec: FormatSpec
    #: Whether a function's parameters fit this format (its name aside).
    fits: Callable[[FunctionShape], bool]
    #: The entry's arguments from a row, the check's configuration and a Message factory.
    bind: Binder
    #: What the entry returned, as a Score; or InvalidScore naming the fix.
    coerce: Callable[[Any, OutputType | None], Score]
    #: Whether what the entry returned skips the row.
    skips: Callable[[Any], bool] = _never
    #: A fit beyond :attr:`fits`, for an entry named at upload (``explicit``) or found by name.
    loose_fit: Callable[[FunctionShape, bool], bool] = _never
    #: The entry's bindings when this format binds them its own way (else None).
    own_bindings: Callable[[FunctionShape], dict[str, str] | None] = _none

    @property
    def format(self) -> Format:
        """The format this adapter runs."""
        return self.spec.format


def fits_by_keywords(spec: FormatSpec, shape: FunctionShape) -> bool:
    """A keyword-bound entry fits when it requires something, all of it among the names."""
    if shape.var_positional:
        return False
    return bool(shape.required) and all(n in spec.parameters for n in shape.required)


def fits_positionally(spec: FormatSpec, shape: FunctionShape) -> bool:
    """A positional entry fits when it requires exactly :attr:`FormatSpec.positional`."""
    assert spec.positional is not None  # nosec B101 (a positional format's helper)
    names = [p.name for p in shape.params]
    return len(shape.required) == spec.positional and len(names) >= spec.positional
