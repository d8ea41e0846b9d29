"""The agreement gate: requirements parsed with errors naming the form, judged on the
intervals' lower bounds, and "too few labels" before any figure."""

from __future__ import annotations

import pytest

from engine.calibration.gate import BELOW, PASSED, judge, parse_requirement
from engine.calibration.report import TOO_FEW
from engine.errors import InvalidRequestError

REPORT = {
    "check": "is_helpful@2",
    "verdict": "enough labels",
    "kappa": {"value": 0.72, "ci": [0.61, 0.82]},
    "tpr": {"value": 0.9, "ci": [0.786, 0.957]},
    "tnr": {"value": 0.95, "ci": [0.85, 0.99]},
    "weighted_kappa": {"quadratic": {"value": 0.8, "ci": [0.7, 0.9]}},
}


def test_parse() -> None:
    r = parse_requirement("helpful:tpr=0.8,tnr=0.8")
    assert r.labels == "helpful" and r.minimums == (("tpr", 0.8), ("tnr", 0.8))
    assert str(r) == "helpful:tpr=0.8,tnr=0.8"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("helpful", "use LABELS:FIGURE=MIN"),
        ("helpful:kapa=0.6", "'kapa' is not one of"),
        ("helpful:kappa=high", "'high' is not a number"),
        ("helpful:kappa=2", "minimums are -1 to 1"),
    ],
)
def test_parse_errors_name_the_form(text: str, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        parse_requirement(text)


def test_lower_bound_decides() -> None:
    assert judge(REPORT, parse_requirement("helpful:kappa=0.6")).status == PASSED
    # the point estimate 0.72 is above 0.7, its lower bound 0.61 is not
    below = judge(REPORT, parse_requirement("helpful:kappa=0.7"))
    assert below.status == BELOW
    assert "kappa 0.720 [0.610, 0.820]: its lower bound is below 0.7" in below.message
    # TPR 0.9 on 50 labels: the lower bound 0.786 misses 0.8
    assert judge(REPORT, parse_requirement("helpful:tpr=0.8,tnr=0.8")).status == BELOW
    assert judge(REPORT, parse_requirement("helpful:quadratic_kappa=0.7")).status == PASSED
    missing = judge(REPORT, parse_requirement("helpful:auc=0.7"))
    assert missing.status == BELOW and "auc is not measured" in missing.message


def test_too_few_labels_first() -> None:
    few = {**REPORT, "verdict": TOO_FEW, "message": "too few labels: 18 more 'false'"}
    result = judge(few, parse_requirement("helpful:kappa=0.1"))
    assert result.status == TOO_FEW
    assert result.message == "is_helpful@2 against 'helpful': too few labels: 18 more 'false'"


def test_holdout_is_seeded_stratified_and_the_same_for_the_same_rows() -> None:
    from engine.calibration.holdout import held_out, majorities

    votes = [("r", i, i % 4 == 0) for i in range(40)] + [("r", 0, False), ("r", 0, False)]
    rows = majorities(votes)
    assert rows[("r", 0)] is False  # one true, two false
    assert len(rows) == 40
    one = held_out(rows, 0.25, seed=3)
    assert one == held_out(dict(reversed(list(rows.items()))), 0.25, seed=3)  # order-free
    assert one != held_out(rows, 0.25, seed=4)
    trues = {t for t, v in rows.items() if v}
    assert len(one & trues) == round(0.25 * len(trues))  # stratified by label
    assert len(one - trues) == round(0.25 * (40 - len(trues)))
    with pytest.raises(ValueError, match="between 0 and 1"):
        held_out(rows, 1.0, 0)
