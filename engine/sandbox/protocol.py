"""The host <-> harness job protocol (docs/architecture.md, "Sandbox"), host side.

The host writes one job to the container's stdin: a line holding the byte
length of the JSON document, then the document, whose rows travel as columns
(``n`` rows; ``columns``: one JSON list per field a row may hold, a field no row
holds left out; engine/harness/binding.py). The harness answers on stdout
with one line per record, ``<nonce> <json>\\n``: ``loaded`` once the check is
loaded, then the rows in order, ``done`` at the end. Rows come as ``block``
records (a run of rows as columns, engine/sandbox/blocks.py) when the job asks
for ``result_blocks``, else as one ``row`` record each; a row the harness's
parent decides (a timeout, a crash) is always a ``row`` record. The host trusts
nothing it reads: lines without the nonce are ignored, records are size-bounded
and parsed strictly, and row indices must come in order.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from engine.contract import PROTOCOL_VERSION, OutputType, Policy, Status
from engine.contract.formats import Format
from engine.models import Row
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.columns import RowColumns, dump_row_columns


class JobRow(BaseModel):
    """A row as the harness sees it; ``i`` is its index in the job."""

    model_config = ConfigDict(extra="forbid")

    i: int
    model_output: str
    scenario_input: Any = None
    scenario_result: Any = None
    model_input: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[dict[str, Any]] | None = None
    item: dict[str, Any] | None = None
    sample: dict[str, Any] | None = None
    vars: dict[str, Any] | None = None
    ground_truth: Any = None
    output: Any = None


class Job(BaseModel):
    """One check version over one batch of rows."""

    model_config = ConfigDict(extra="forbid")

    protocol: int = PROTOCOL_VERSION
    nonce: str
    source: str
    policy: Policy = Policy.STANDARD
    output_type: OutputType | None = None
    row_timeout_seconds: float
    load_timeout_seconds: float = 20.0
    max_output_bytes: int
    max_row_output_chars: int = 4096
    #: The entry function named at upload (None: found by name or by its parameters).
    entry: str | None = None
    #: The host found the source an Okareo check (engine/sandbox/load_hints.py): the
    #: harness's child goes straight to its entry, without parsing it again.
    okareo: bool = False
    #: The check version's configuration, bound by the format (engine.contract.formats.bind).
    config: dict[str, Any] | None = None
    #: Under gVisor: how many tasks the checks may create in one container before it is
    #: retired (each leaves host threads behind for a while; see ``pids_options``).
    task_budget: int | None = None
    #: Whether the container may get another job after this one: if not (it is discarded
    #: after it), the harness forks no child ahead of a next job (engine/harness/ahead.py).
    fork_ahead: bool = True
    #: Model gateway: a row whose check called the model may run this long
    #: (None: no gateway for this job; its requests are refused).
    gateway_row_timeout_seconds: float | None = None
    #: Model requests the container may have waiting on the host at once.
    gateway_concurrency: int = 4
    #: One model request's body (a request record must fit ``max_record_bytes``).
    max_request_bytes: int = 48 * 1024
    #: Results as blocks of columns (engine/sandbox/blocks.py), else one record per row.
    result_blocks: bool = True
    #: One block record's bytes at most (the host's ``max_record_bytes``).
    max_block_bytes: int = 64 * 1024
    #: Row values, or (``score_table``'s columns) the rows kept as columns.
    rows: RowColumns | list[Row] = Field(union_mode="left_to_right")

    def encode(self) -> bytes:
        """The bytes written to the harness's stdin: the rows as columns, each column
        serialised in one call (a row is known by its index, its records' ``i``; the
        client's id stays home)."""
        head = self.model_dump_json(exclude={"rows"}).encode()
        if isinstance(self.rows, RowColumns):
            columns = self.rows.dump_columns()
        else:
            columns = dump_row_columns(self.rows)
        n = str(len(self.rows)).encode()
        body = b"".join((head[:-1], b',"n":', n, b',"columns":', columns, b"}"))
        return str(len(body)).encode() + b"\n" + body

    def job_rows(self) -> list[JobRow]:
        """The rows as the harness sees them (for test doubles; the wire format is ``encode``)."""
        return [
            JobRow(i=index, **row.model_dump(exclude={"id"})) for index, row in enumerate(self.rows)
        ]


class LoadedRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    t: Literal["loaded"]
    ok: bool
    error: str | None = Field(default=None, max_length=16384)
    parameters: list[str] = Field(default_factory=list, max_length=16)
    #: The scorer format the harness recognised and its entry function (not for Okareo).
    format: Format | None = None
    entry: str | None = Field(default=None, max_length=200)


class RowRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    t: Literal["row"]
    i: int
    status: Status
    score: bool | int | float | None = None
    output_type: OutputType | None = None
    explanation: str | None = Field(default=None, max_length=8192)
    error: str | None = Field(default=None, max_length=16384)
    output: str | None = Field(default=None, max_length=16384)
    ms: float = Field(ge=0)
    #: The model that served the row's gateway calls: the host's to set, a container's is
    #: overwritten (see the Docker backend).
    served_by: str | None = None
    #: The format's own pass flag (promptfoo's ``pass``, a bool score), when it has one.
    passed: bool | None = None
    #: Sub-scores and a format's extra result keys (bounded by ``max_record_bytes``).
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RowRecord:
        """Refuse statuses only the host or the judge can know, and self-contradicting records."""
        if self.status in HOST_ONLY_STATUSES:
            raise ValueError(
                f"status {self.status.value!r} is the host's to give, not the sandbox's"
            )
        if self.status is Status.OK:
            if self.score is None or self.error is not None:
                raise ValueError("an ok row needs a score and no error")
            if isinstance(self.score, float) and not math.isfinite(self.score):
                raise ValueError("an ok row's score must be finite")
            if self.output_type is not None and _SCORE_TYPES[self.output_type] is not type(
                self.score
            ):
                raise ValueError(f"score {self.score!r} is not of type {self.output_type.value}")
        elif self.score is not None or self.passed is not None or self.metadata is not None:
            raise ValueError(f"a {self.status.value} row carries no score")
        return self


#: Statuses a container may never report: the host (sandbox_error) or the judge (judge_error)
#: decides them. ``skipped`` is accepted only where the host agrees (see the runner).
HOST_ONLY_STATUSES = frozenset({Status.SANDBOX_ERROR, Status.JUDGE_ERROR})
_SCORE_TYPES: dict[OutputType, type] = {
    OutputType.BOOL: bool,
    OutputType.INT: int,
    OutputType.FLOAT: float,
}


class DoneRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    t: Literal["done"]
    rows: int
    #: The harness put the container back as the job found it (no stray process left) and
    #: the checks stayed within the job's ``task_budget``: it may serve another job.
    reusable: bool = True


class LLMRequestRecord(BaseModel):
    """A model request from a check, relayed by the harness parent from its loopback gateway."""

    model_config = ConfigDict(extra="forbid")
    t: Literal["llm"]
    id: int = Field(ge=1)
    method: str = Field(max_length=16)
    path: str = Field(max_length=512)
    body: str


def encode_reply(request_id: int, status: int, body: str) -> bytes:
    """A reply frame for the container's stdin: ``r<length>\n<json>``."""
    document = json.dumps({"id": request_id, "status": status, "body": body}).encode()
    return b"r" + str(len(document)).encode() + b"\n" + document


Record = Annotated[
    LoadedRecord | RowRecord | BlockRecord | DoneRecord | LLMRequestRecord,
    Field(discriminator="t"),
]
AnyRecord = LoadedRecord | RowRecord | BlockRecord | DoneRecord | LLMRequestRecord
_RECORD = TypeAdapter(Record)
_RECORDS = TypeAdapter(list[Record])


class ProtocolError(ValueError):
    """A record from the harness broke the protocol."""


def parse_record(line: bytes, nonce: str, max_record_bytes: int) -> AnyRecord | None:
    """Parse one stdout line: None for a line that is not ours (no nonce), else a record.

    Raises :class:`ProtocolError` for a line with our nonce that is oversized or malformed.
    """
    prefix = nonce.encode() + b" "
    if not line.startswith(prefix):
        return None
    if len(line) > max_record_bytes:
        raise ProtocolError(f"result record of {len(line)} bytes exceeds {max_record_bytes}")
    try:
        data = json.loads(line[len(prefix) :])
        return _RECORD.validate_python(data)
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"malformed result record: {exc}") from exc


def parse_records(
    lines: list[bytes], nonce: str, max_record_bytes: int
) -> tuple[list[AnyRecord], ProtocolError | None]:
    """Parse complete stdout lines at once: the records in order, and the error after them.

    The hot path decodes and validates every record of a read in one pydantic call (about
    a third of a line-by-line ``json.loads`` and validation). If anything in the batch is
    wrong, the lines are parsed one by one instead, so the records before the bad one
    still count and the error is worded for that one line.
    """
    prefix = nonce.encode() + b" "
    cut = len(prefix)
    bodies = [line[cut:] for line in lines if line.startswith(prefix)]
    if all(len(body) + cut <= max_record_bytes for body in bodies):
        try:
            records = _RECORDS.validate_json(b"[" + b",".join(bodies) + b"]")
        except ValueError:
            pass
        else:
            if len(records) == len(bodies):  # one record per line, never two in one
                return records, None
    out: list[AnyRecord] = []
    for line in lines:
        try:
            record = parse_record(line, nonce, max_record_bytes)
        except ProtocolError as exc:
            return out, exc
        if record is not None:
            out.append(record)
    return out, None
