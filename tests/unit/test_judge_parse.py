"""Judge reply parsing: every accepted form, and what is refused."""

from __future__ import annotations

import pytest

from engine.judging.parse import (
    UnparseableReplyError,
    parse_pass_fail,
    parse_preference,
    parse_score,
)


@pytest.mark.parametrize(
    ("reply", "score", "explanation"),
    [
        ("SCORE: 4", 4, None),
        ("4", 4, None),
        ("  5.  ", 5, None),
        ("Score: 4/5", 4, None),
        ("4/5", 4, None),
        ("The text is clear.\nSCORE: 3", 3, "The text is clear."),
        ("Clear and short.\n\n**Score:** 5", 5, "Clear and short."),
        ("Rating: 2 out of 5", 2, None),
        ("Final score = 1", 1, None),
        ("Score (1-5): 4", 4, None),
        ("Good.\n4/5", 4, "Good."),
        # the last labelled score wins: judges reason first and conclude last
        ("A Score: 1 would mean useless.\nSCORE: 4", 4, "A Score: 1 would mean useless."),
        ('{"score": 4, "explanation": "Mostly fluent."}', 4, "Mostly fluent."),
        ('{"Score": "5", "reasoning": "Perfect."}', 5, "Perfect."),
        ('{"score": 4.0}', 4, None),
        ('{"rating": "3/5", "rationale": "ok"}', 3, "ok"),
        ('Here you go:\n```json\n{"score": 2, "explanation": "Wordy."}\n```', 2, "Wordy."),
        ('My grade: {"score": 5, "explanation": "Great"} done', 5, "Great"),
    ],
)
def test_score_forms(reply: str, score: int, explanation: str | None) -> None:
    parsed = parse_score(reply)
    assert parsed.score == score
    assert parsed.explanation == explanation


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I think it is pretty good.",
        "SCORE: 6",  # out of range
        "SCORE: 0",
        "Score: 8/10",  # another scale
        "SCORE: 3.5",  # not an integer
        '{"score": 7}',
        '{"score": true}',
        '{"score": null}',
        '{"score": "high"}',
        "The answer has 3 parts and 2 errors.",  # digits, but no score
        "There were 4 issues.\nOverall fine",
    ],
)
def test_unparseable_scores(reply: str) -> None:
    with pytest.raises(UnparseableReplyError):
        parse_score(reply)


def test_open_scale_for_model_checks() -> None:
    assert parse_score("SCORE: 9", low=None, high=None).score == 9
    assert parse_score("SCORE: 7/10", low=None, high=None).score == 7
    with pytest.raises(UnparseableReplyError):
        parse_score("SCORE: 11/10", low=None, high=None)
    assert parse_score("SCORE: 8/10", low=0, high=10).score == 8


@pytest.mark.parametrize(
    ("reply", "passed"),
    [
        ("PASS", True),
        ("fail", False),
        ("Yes", True),
        ("no.", False),
        ("True", True),
        ("The answer cites the source.\nRESULT: PASS", True),
        ("Missing the date.\nResult: FAIL", False),
        ("**Verdict**: pass", True),
        ("Reasoning...\nFAIL", False),
        ('{"pass": true, "explanation": "ok"}', True),
        ('{"result": "FAIL"}', False),
        ('{"score": 1}', True),
        ('{"passed": 0}', False),
        ('```json\n{"verdict": "yes"}\n```', True),
    ],
)
def test_pass_fail_forms(reply: str, passed: bool) -> None:
    assert parse_pass_fail(reply).passed is passed


def test_pass_fail_explanation() -> None:
    parsed = parse_pass_fail("The answer cites the source.\nRESULT: PASS")
    assert parsed.explanation == "The answer cites the source."
    assert parse_pass_fail('{"pass": false, "reason": "wrong"}').explanation == "wrong"


@pytest.mark.parametrize(
    "reply", ["", "It depends.", "maybe", '{"pass": "perhaps"}', '{"result": 3}', "RESULT: unsure"]
)
def test_unparseable_pass_fail(reply: str) -> None:
    with pytest.raises(UnparseableReplyError):
        parse_pass_fail(reply)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("A", "A"),
        ("b", "B"),
        ("SAME", "SAME"),
        ("tie", "SAME"),
        ("VERDICT: A", "A"),
        ("B is more precise.\nVerdict: B", "B"),
        ("Winner: Response A", "A"),
        ("Both fine.\nVERDICT: SAME", "SAME"),
        ("[[A]]", "A"),
        ("Close call. [[C]]", "SAME"),
        ('{"verdict": "B", "explanation": "B is right"}', "B"),
        ('{"winner": "Output A"}', "A"),
        ("Reasoning first.\n\nA", "A"),
    ],
)
def test_preference_forms(reply: str, verdict: str) -> None:
    assert parse_preference(reply).verdict == verdict


@pytest.mark.parametrize("reply", ["", "Both have merits.", "VERDICT: D", '{"verdict": "X"}'])
def test_unparseable_preference(reply: str) -> None:
    with pytest.raises(UnparseableReplyError):
        parse_preference(reply)
