"""Parse a judge's reply into a score, a pass/fail verdict or a pairwise preference. Pure.

Accepted forms, tried in this order (the first that yields a value wins):

1. JSON: the whole reply, a fenced ```json block, or the outermost ``{...}`` in
   the text. Keys are matched case-insensitively: ``score``/``rating``/``grade``
   (scores), ``pass``/``passed``/``result``/``verdict``/``answer``/``score``
   (pass/fail), ``verdict``/``winner``/``preference``/``choice``/``answer``
   (pairwise); the explanation is ``explanation``/``reasoning``/``reason``/
   ``rationale``/``justification``.
2. A labelled line, the *last* one wins (judges reason first, conclude last):
   ``SCORE: 4``, ``Score: 4/5``, ``**Rating**: 4``, ``RESULT: PASS``,
   ``Verdict: B``, ``[[A]]``.
3. A bare answer: the reply is only ``4``, ``4/5``, ``PASS``, ``yes``, ``A``...;
   or (pass/fail and pairwise) the last line is only such a word; or (scores)
   the last line is only ``n/high``.

Anything else is unparseable: :class:`UnparseableReplyError`, which the judges
turn into ``judge_error`` (never a default score). A number outside the scale,
a fraction whose denominator is not the scale's top, or a non-integer is
unparseable too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["A", "B", "SAME"]

#: Longest explanation kept from a judge, in characters.
MAX_JUDGE_EXPLANATION_CHARS = 4000

_SCORE_KEYS = ("score", "rating", "grade")
_PASS_KEYS = ("pass", "passed", "result", "verdict", "answer", "score", "label")
_PAIR_KEYS = ("verdict", "winner", "preference", "choice", "answer", "better", "result")
_EXPLANATION_KEYS = ("explanation", "reasoning", "reason", "rationale", "justification")

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_LABEL = r"(?:final\s+)?(?:score|rating|grade)"
_SCORE_LINE = re.compile(
    rf"(?im)^[\s>*_#-]*{_LABEL}[\s*_]*(?:\(\s*\d+\s*-\s*\d+\s*\))?[\s*_]*[:=][\s*_]*"
    rf"({_NUMBER})(?:\s*(?:/|out\s+of)\s*(\d+))?[\s*_.]*(?:$|\s)"
)
_BARE_SCORE = re.compile(rf"^[\s*_]*({_NUMBER})(?:\s*(?:/|out\s+of)\s*(\d+))?[\s*_.!]*$")
_PASS_LABEL = re.compile(
    r"(?im)^[\s>*_#-]*(?:final\s+)?(?:result|verdict|answer|grade|decision|judgement|judgment"
    r"|pass_fail|pass/fail|score)[\s*_]*[:=][\s*_]*\"?([A-Za-z]+)\"?"
)
_PAIR_LABEL = re.compile(
    r"(?im)^[\s>*_#-]*(?:final\s+)?(?:verdict|winner|preference|choice|answer|better|result"
    r"|decision)[\s*_]*[:=][\s*_]*\"?(?:output|response|answer|assistant)?\s*\"?"
    r"([A-Za-z]+)\"?"
)
_BRACKETED = re.compile(r"\[\[\s*([A-Za-z]+)\s*\]\]")

_PASS_WORDS = {
    # bandit B105: a verdict word, not a password
    "pass": True,  # nosec B105
    "passed": True,
    "yes": True,
    "true": True,
    "correct": True,
    "fail": False,
    "failed": False,
    "no": False,
    "false": False,
    "incorrect": False,
}
_PAIR_WORDS: dict[str, Verdict] = {
    "a": "A",
    "b": "B",
    "same": "SAME",
    "tie": "SAME",
    "equal": "SAME",
    "both": "SAME",
    "neither": "SAME",
    "c": "SAME",  # MT-Bench writes a tie as [[C]]
}


class UnparseableReplyError(ValueError):
    """The reply holds no value in an accepted form; the message says what was expected."""


@dataclass(frozen=True)
class ParsedScore:
    """A score (an integer, but for judges with their own published parser) and the judge's
    explanation (None when it gave none)."""

    score: int | float
    explanation: str | None


@dataclass(frozen=True)
class ParsedPassFail:
    """A pass/fail verdict and the judge's explanation."""

    passed: bool
    explanation: str | None


@dataclass(frozen=True)
class ParsedPreference:
    """A pairwise verdict (``A``, ``B`` or ``SAME``) and the judge's explanation."""

    verdict: Verdict
    explanation: str | None


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_JUDGE_EXPLANATION_CHARS:
        return text[: MAX_JUDGE_EXPLANATION_CHARS - 3] + "..."
    return text


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in the reply: whole text, a fenced block, or the outermost braces."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        if not candidate.startswith("{"):
            continue
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return {str(k).lower(): v for k, v in value.items()}
    return None


def _json_explanation(obj: dict[str, Any]) -> str | None:
    for key in _EXPLANATION_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            return _clip(value)
    return None


def _remaining_text(text: str, span: tuple[int, int]) -> str | None:
    """The reply without the matched answer: what the judge said to explain it."""
    return _clip(text[: span[0]] + text[span[1] :])


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _as_int_score(raw: str, denominator: str | None, low: int | None, high: int | None) -> int:
    try:
        value = float(raw)
    except ValueError as exc:
        raise UnparseableReplyError(f"{raw!r} is not a number") from exc
    if not value.is_integer():
        raise UnparseableReplyError(f"score {raw} is not an integer")
    score = int(value)
    if denominator is not None:
        top = int(denominator)
        if high is not None and top != high:
            raise UnparseableReplyError(f"score {raw}/{denominator} is not on the 1-{high} scale")
        if score > top:
            raise UnparseableReplyError(f"score {raw}/{denominator} is above its own maximum")
    if (low is not None and score < low) or (high is not None and score > high):
        raise UnparseableReplyError(f"score {score} is outside the scale {low}-{high}")
    return score


def _scale_text(low: int | None, high: int | None) -> str:
    if low is None or high is None:
        return "an integer"
    return f"an integer from {low} to {high}"


def parse_score(text: str, *, low: int | None = 1, high: int | None = 5) -> ParsedScore:
    """An integer score on ``low..high`` (either bound may be None: open) and the explanation."""
    obj = _json_object(text)
    if obj is not None:
        for key in _SCORE_KEYS:
            if key not in obj:
                continue
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise UnparseableReplyError(f"JSON {key!r} is {value!r}, not a number")
            raw, denominator = str(value).strip(), None
            if isinstance(value, str) and "/" in value:
                raw, _, denominator = (part.strip() for part in value.partition("/"))
            return ParsedScore(_as_int_score(raw, denominator, low, high), _json_explanation(obj))
    matches = list(_SCORE_LINE.finditer(text))
    if matches:
        last = matches[-1]
        score = _as_int_score(last.group(1), last.group(2), low, high)
        return ParsedScore(score, _remaining_text(text, last.span()))
    bare = _BARE_SCORE.match(text.strip()) or _BARE_SCORE.match(_last_line(text))
    if bare is not None and (bare.group(2) is not None or bare.string == text.strip()):
        score = _as_int_score(bare.group(1), bare.group(2), low, high)
        rest = text.strip()
        cut = rest.rfind(bare.string.strip()) if bare.string != rest else 0
        return ParsedScore(score, _clip(rest[:cut]) if cut > 0 else None)
    raise UnparseableReplyError(
        f"no score found: expected {_scale_text(low, high)} as `SCORE: n`, `n/{high or 'max'}`,"
        ' or JSON {"score": n, "explanation": "..."}'
    )


def _pass_word(word: str) -> bool | None:
    return _PASS_WORDS.get(word.strip().strip("*_.!\"'`").lower())


def parse_pass_fail(text: str) -> ParsedPassFail:
    """A pass/fail verdict (PASS/FAIL, yes/no, true/false) and the explanation."""
    obj = _json_object(text)
    if obj is not None:
        for key in _PASS_KEYS:
            if key not in obj:
                continue
            value = obj[key]
            verdict: bool | None
            if isinstance(value, bool):
                verdict = value
            elif isinstance(value, int | float) and value in (0, 1):
                verdict = bool(value)
            elif isinstance(value, str):
                verdict = _pass_word(value)
            else:
                verdict = None
            if verdict is None:
                raise UnparseableReplyError(f"JSON {key!r} is {value!r}, not pass or fail")
            return ParsedPassFail(verdict, _json_explanation(obj))
    matches = [m for m in _PASS_LABEL.finditer(text) if _pass_word(m.group(1)) is not None]
    if matches:
        last = matches[-1]
        verdict = _pass_word(last.group(1))
        assert verdict is not None
        return ParsedPassFail(verdict, _remaining_text(text, last.span()))
    stripped = text.strip()
    whole = _pass_word(stripped)
    if whole is not None:
        return ParsedPassFail(whole, None)
    line = _last_line(stripped)
    last_word = _pass_word(line)
    if last_word is not None:
        return ParsedPassFail(last_word, _clip(stripped[: stripped.rfind(line)]))
    raise UnparseableReplyError(
        "no verdict found: expected `RESULT: PASS` or `RESULT: FAIL` (or yes/no),"
        ' or JSON {"pass": true, "explanation": "..."}'
    )


def _pair_word(word: str) -> Verdict | None:
    return _PAIR_WORDS.get(word.strip().strip("*_.!\"'`[]()").lower())


def parse_preference(text: str) -> ParsedPreference:
    """A pairwise verdict: ``A``, ``B`` or ``SAME`` (tie/equal/both, MT-Bench's ``[[C]]``)."""
    obj = _json_object(text)
    if obj is not None:
        for key in _PAIR_KEYS:
            if key not in obj:
                continue
            value = obj[key]
            verdict = _pair_word(str(value).split()[-1]) if isinstance(value, str) else None
            if verdict is None:
                raise UnparseableReplyError(f"JSON {key!r} is {value!r}, not A, B or SAME")
            return ParsedPreference(verdict, _json_explanation(obj))
    bracketed = [m for m in _BRACKETED.finditer(text) if _pair_word(m.group(1))]
    labelled = [m for m in _PAIR_LABEL.finditer(text) if _pair_word(m.group(1))]
    matches = sorted(bracketed + labelled, key=lambda m: m.start())
    if matches:
        last = matches[-1]
        verdict = _pair_word(last.group(1))
        assert verdict is not None
        return ParsedPreference(verdict, _remaining_text(text, last.span()))
    stripped = text.strip()
    line = _last_line(stripped)
    for candidate in (stripped, line):
        verdict = _pair_word(candidate)
        if verdict is not None:
            cut = stripped.rfind(line) if candidate is line else 0
            return ParsedPreference(verdict, _clip(stripped[:cut]) if cut > 0 else None)
    raise UnparseableReplyError(
        "no verdict found: expected `VERDICT: A`, `VERDICT: B` or `VERDICT: SAME`,"
        ' or JSON {"verdict": "A", "explanation": "..."}'
    )
