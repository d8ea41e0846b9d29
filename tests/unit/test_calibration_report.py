"""The agreement report: its public field names, the minimum-n verdict, disagreements."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from engine.calibration.report import (
    ENOUGH,
    TOO_FEW,
    LabelledItem,
    LabelSpec,
    ReportOptions,
    agreement_report,
)

HELPFUL = LabelSpec("helpful", "bool")
FAST = ReportOptions(n_resamples=300)


def _items(human: Sequence[object], check: Sequence[object]) -> list[LabelledItem]:
    return [
        LabelledItem({"run": "r1", "row": i}, [("ann", h)], score=c, link=f"/ui/runs/r1/rows/{i}")
        for i, (h, c) in enumerate(zip(human, check, strict=True))
    ]


def _figure(fig: object) -> None:
    assert isinstance(fig, dict) and set(fig) == {"value", "ci"}
    assert len(fig["ci"]) == 2


def test_bool_report_fields_and_counts() -> None:
    human = [True] * 40 + [False] * 40
    check = [True] * 36 + [False] * 4 + [False] * 30 + [True] * 10
    r = agreement_report(_items(human, check), HELPFUL, FAST)
    json.dumps(r)  # JSON-ready
    assert r["n"] == 80
    assert r["per_class"] == {"false": 40, "true": 40}
    assert r["confusion"] == {
        "labels": ["false", "true"],
        "check_labels": ["false", "true"],
        "matrix": [[30, 10], [4, 36]],
    }
    for name in ("tpr", "tnr", "accuracy", "f1", "mcc", "kappa"):
        _figure(r[name])
    assert r["tpr"]["value"] == pytest.approx(0.9)
    assert r["tnr"]["value"] == pytest.approx(0.75)
    assert r["verdict"] == ENOUGH
    assert r["seed"] == 0
    # 14 disagreements, every one linked to its row page
    assert len(r["disagreements"]) == 14
    assert r["disagreements"][0]["link"].startswith("/ui/runs/r1/rows/")


def test_too_few_labels_names_the_class_and_how_many() -> None:
    human = [True] * 40 + [False] * 12
    r = agreement_report(_items(human, human), HELPFUL, FAST)
    assert r["verdict"] == TOO_FEW
    assert r["missing"] == {"false": 18}
    assert "18 more 'false'" in r["message"]
    assert r["kappa"]["value"] == 1.0  # figures are still given


def test_min_per_class_is_a_setting() -> None:
    human = [True] * 12 + [False] * 12
    r = agreement_report(
        _items(human, human), HELPFUL, ReportOptions(n_resamples=100, min_per_class=10)
    )
    assert r["verdict"] == ENOUGH


def test_one_class_only() -> None:
    human = [True] * 50
    r = agreement_report(_items(human, human), HELPFUL, FAST)
    assert r["verdict"] == TOO_FEW and r["missing"] == {"false": 30}
    assert r["kappa"]["value"] is None
    assert r["tnr"] == {"value": None, "ci": [None, None]}


def test_float_check_threshold_on_a_seeded_split() -> None:
    rng = np.random.default_rng(0)
    human = list(rng.random(200) < 0.5)
    scores = [round(float(h) * 0.4 + float(rng.random()) * 0.6, 3) for h in human]
    r = agreement_report(_items(human, scores), HELPFUL, FAST)
    assert r["auc"]["value"] > 0.7
    chosen = r["suggested_threshold"]
    assert chosen["split"]["dev"] + chosen["split"]["test"] == 200
    assert chosen["test"]["tpr"]["value"] == r["tpr"]["value"]
    assert r["outcome_from"] == "suggested threshold, on the test split"
    assert sum(map(sum, r["confusion"]["matrix"])) == chosen["split"]["test"]
    again = agreement_report(_items(human, scores), HELPFUL, FAST)
    assert again == r  # the seed reproduces it exactly
    other = agreement_report(_items(human, scores), HELPFUL, ReportOptions(n_resamples=300, seed=1))
    assert other["suggested_threshold"]["split"] == {**chosen["split"], "seed": 1}
    # most confident disagreement first: the furthest from the threshold
    conf = [d["confidence"] for d in r["disagreements"]]
    assert conf == sorted(conf, reverse=True)


def test_ordinal_report() -> None:
    spec = LabelSpec("quality", "ordinal", (1, 2, 3, 4, 5))
    rng = np.random.default_rng(2)
    human = [int(x) for x in rng.integers(1, 6, 200)]
    check = [int(np.clip(h + rng.integers(-1, 2), 1, 5)) for h in human]
    r = agreement_report(_items(human, check), spec, FAST)
    for name in ("spearman", "kendall_tau_b", "mae"):
        _figure(r[name])
    assert set(r["weighted_kappa"]) == {"linear", "quadratic"}
    assert r["weighted_kappa"]["quadratic"]["value"] > r["weighted_kappa"]["linear"]["value"]
    assert len(r["confusion"]["matrix"]) == 5


def test_several_annotators_alpha_pairwise_and_majority() -> None:
    items = []
    for i in range(60):
        truth = i % 2 == 0
        labels = [("ann", truth), ("bob", truth if i % 10 else not truth)]
        if i < 20:
            labels.append(("cy", truth))
        items.append(LabelledItem({"run": "r", "row": i}, labels, score=truth))
    r = agreement_report(items, HELPFUL, FAST)
    # rows 20, 30, 40, 50 split ann/bob 1-1 without cy: no majority, left out
    assert r["skipped"]["no_majority"] == 4 and r["n"] == 56
    a = r["annotators"]
    assert a["names"] == ["ann", "bob", "cy"]
    _figure(a["alpha"])
    pairs = {(p["a"], p["b"]): p for p in a["pairwise_kappa"]}
    assert pairs[("ann", "cy")]["kappa"]["value"] == 1.0
    assert pairs[("ann", "bob")]["n"] == 60
    # the check (which says the truth) against each person alone
    each = {e["annotator"]: e for e in a["check_vs_each"]}
    assert each["ann"]["kappa"]["value"] == 1.0 and each["cy"]["kappa"]["value"] == 1.0
    assert each["bob"]["kappa"]["value"] < 1.0
    assert each["ann"]["n"] == 56  # the rows with a majority


def test_category_report() -> None:
    spec = LabelSpec("topic", "category", ("billing", "tech", "other"))
    human = ["billing", "tech", "other"] * 20
    check = ["billing", "tech", "tech"] * 20
    r = agreement_report(_items(human, check), spec, FAST)
    assert r["accuracy"]["value"] == pytest.approx(2 / 3)
    assert r["confusion"]["matrix"][2] == [0, 20, 0]
