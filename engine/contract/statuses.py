"""Statuses, score types, policies and the protocol version: the contract's vocabulary.

Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

from enum import StrEnum

#: Version of the host <-> harness job protocol; bumped on any incompatible change.
PROTOCOL_VERSION = 4


class OutputType(StrEnum):
    """Type of a check's score."""

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"


#: Ints must fit a signed 64-bit integer (what databases and JSON consumers hold).
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1

#: Longest explanation kept from a check, in characters.
MAX_EXPLANATION_CHARS = 4096


class Status(StrEnum):
    """Typed outcome of one check on one row. Never folded into a score of 0."""

    OK = "ok"
    ERROR = "error"  # evaluate raised
    TIMEOUT = "timeout"  # per-row or batch wall clock passed
    OOM = "oom"  # memory limit reached
    INVALID_SCORE = "invalid_score"  # wrong type, NaN/inf, int out of range
    OUTPUT_LIMIT = "output_limit"  # the check printed more than allowed
    CRASHED = "crashed"  # the process died (segfault, os._exit, killed)
    SKIPPED = "skipped"  # inputs the check requires are missing on the row
    JUDGE_ERROR = "judge_error"  # LLM unreachable or reply unparseable
    SANDBOX_ERROR = "sandbox_error"  # our infrastructure failed


class Policy(StrEnum):
    """How strictly a check's source is vetted (and, for ``restricted``, executed)."""

    STANDARD = "standard"
    RESTRICTED = "restricted"


#: The statuses a check's own process may report, in result-block order: a block carries
#: each row's status as one byte, its index here (engine/sandbox/blocks.py). Every other
#: status (timeout, crashed, judge_error, sandbox_error) is decided outside the check.
CHECK_STATUSES: tuple[Status, ...] = (
    Status.OK,
    Status.ERROR,
    Status.OOM,
    Status.INVALID_SCORE,
    Status.OUTPUT_LIMIT,
    Status.SKIPPED,
)

#: A score's kind in a result block, a byte each: none (the row has no score), then the
#: three output types in this order.
SCORE_KINDS: tuple[OutputType | None, ...] = (
    None,
    OutputType.BOOL,
    OutputType.INT,
    OutputType.FLOAT,
)
