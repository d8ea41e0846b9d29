"""The agreement report: a check's results against human labels, as public JSON.

Field names are fixed so reports compare across versions and tools: every figure is
``{"value", "ci": [lo, hi]}``; ``confusion`` is ``{"labels", "matrix"}`` with a row per
human label and a column per check outcome. Below ``min_per_class`` labels in any
class the figures are still given, but ``verdict`` is ``"too few labels"`` and
``missing`` says how many of which class are lacking.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.calibration import binary, kappa, ordinal, threshold
from engine.calibration.annotators import krippendorff_alpha, majority
from engine.calibration.intervals import Bootstrap, Figure, bootstrap_table, wilson
from engine.calibration.table import FloatArray, PairTable, build_table

TOO_FEW = "too few labels"
ENOUGH = "enough labels"
LABEL_TYPES = ("bool", "ordinal", "float", "category")


@dataclass(frozen=True)
class LabelSpec:
    """A label name's declared type (``levels`` in order, for ordinal and category)."""

    name: str
    type: str
    levels: tuple[Any, ...] = ()


@dataclass(frozen=True)
class LabelledItem:
    """One labelled target: every annotator's label and the check's result on it."""

    target: Mapping[str, Any]
    labels: Sequence[tuple[str, Any]]
    score: Any = None
    passed: bool | None = None
    link: str | None = None


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of a report; ``seed`` reproduces its intervals and split exactly."""

    seed: int = 0
    n_resamples: int = 2000
    confidence: float = 0.95
    min_per_class: int = 30
    dev_fraction: float = 0.5
    max_disagreements: int = 100
    bootstrap: Bootstrap = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "bootstrap", Bootstrap(self.seed, self.n_resamples, self.confidence)
        )


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _key(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def _figures(
    names: Sequence[str], table: PairTable, stat: Any, opts: ReportOptions
) -> tuple[dict[str, Figure], list[str]]:
    res = bootstrap_table(table, stat, opts.bootstrap)
    return dict(zip(names, res.figures, strict=True)), [names[i] for i in res.fallback]


@dataclass
class _Pairs:
    """The items usable for the report: the human majority beside the check's result."""

    items: list[LabelledItem]
    human: list[Any]
    share: list[float]


def _pairs(items: Sequence[LabelledItem]) -> tuple[_Pairs, int, int]:
    kept: list[LabelledItem] = []
    human: list[Any] = []
    share: list[float] = []
    no_majority = unscored = 0
    for item in items:
        if item.score is None and item.passed is None:
            unscored += 1
            continue
        top = majority([v for _, v in item.labels])
        if top is None:
            no_majority += 1
            continue
        kept.append(item)
        human.append(top[0])
        share.append(top[1])
    return _Pairs(kept, human, share), no_majority, unscored


def _per_class(spec: LabelSpec, human: Sequence[Any]) -> dict[str, int]:
    if spec.type == "bool":
        classes: Sequence[Any] = (False, True)
    elif spec.type in ("ordinal", "category"):
        classes = spec.levels
    else:
        return {"all": len(human)}
    return {_key(c): sum(1 for h in human if h == c) for c in classes}


def _confusion(table: PairTable) -> dict[str, Any]:
    return {
        "labels": [_key(v) for v in table.human_levels],
        "check_labels": [_key(v) for v in table.check_values],
        "matrix": table.counts().astype(int).tolist(),
    }


def _binary(
    human: Sequence[bool], outcome: Sequence[bool], opts: ReportOptions, out: dict[str, Any]
) -> list[str]:
    table = build_table(list(human), list(outcome), (False, True), (False, True))
    counts = table.counts()
    tn, fp, fn, tp = (int(x) for x in counts.ravel())
    out["confusion"] = _confusion(table)
    out["tpr"] = wilson(tp, tp + fn, opts.confidence)
    out["tnr"] = wilson(tn, tn + fp, opts.confidence)
    figs, fallback = _figures(binary.BINARY_NAMES, table, binary.binary_statistics, opts)
    out.update(figs)
    return fallback


def _float_check(
    human: Sequence[bool], scores: Sequence[float], opts: ReportOptions, out: dict[str, Any]
) -> tuple[list[str], np.ndarray, float | None]:
    table = build_table(list(human), list(scores), (False, True))
    figs, fallback = _figures(("auc",), table, lambda t: threshold.auc(t)[None], opts)
    out["auc"] = figs["auc"]
    out["sweep"] = [
        {"threshold": p.threshold, "tpr": round(p.tpr, 6), "tnr": round(p.tnr, 6)}
        for p in threshold.roc_sweep(table.counts(), table.check_values)
    ]
    labels = np.asarray(human, dtype=bool)
    dev = threshold.split_dev(labels, opts.seed, opts.dev_fraction)
    values = np.asarray(scores, dtype=float)
    chosen = None
    if dev.any():
        dev_table = build_table(list(labels[dev]), list(values[dev]), (False, True))
        chosen = threshold.best_threshold(
            threshold.roc_sweep(dev_table.counts(), dev_table.check_values)
        )
    suggestion: dict[str, Any] = {
        "value": None if chosen is None else chosen.threshold,
        "rule": "largest TPR + TNR on the dev split; figures on the test split",
        "split": {
            "seed": opts.seed,
            "dev_fraction": opts.dev_fraction,
            "dev": int(dev.sum()),
            "test": int((~dev).sum()),
        },
    }
    if chosen is not None:
        test_h, test_s = labels[~dev], values[~dev]
        tp = int(((test_s >= chosen.threshold) & test_h).sum())
        fn = int(((test_s < chosen.threshold) & test_h).sum())
        tn = int(((test_s < chosen.threshold) & ~test_h).sum())
        fp = int(((test_s >= chosen.threshold) & ~test_h).sum())
        suggestion["dev"] = {"tpr": chosen.tpr, "tnr": chosen.tnr}
        suggestion["test"] = {
            "tpr": wilson(tp, tp + fn, opts.confidence),
            "tnr": wilson(tn, tn + fp, opts.confidence),
        }
    out["suggested_threshold"] = suggestion
    return fallback, dev, None if chosen is None else chosen.threshold


def _numeric_levels(spec: LabelSpec) -> list[float]:
    if spec.levels and all(_is_number(v) for v in spec.levels):
        return [float(v) for v in spec.levels]
    return [float(i) for i in range(len(spec.levels))]


def _ordinal(
    spec: LabelSpec,
    human: Sequence[Any],
    scores: Sequence[Any],
    opts: ReportOptions,
    out: dict[str, Any],
) -> list[str]:
    rows = spec.levels if spec.type == "ordinal" else tuple(sorted(set(human)))
    xs = _numeric_levels(spec) if spec.type == "ordinal" else [float(v) for v in rows]
    numbers = [float(s) for s in scores]
    table = build_table(list(human), numbers, rows)
    cols = np.asarray(table.check_values, dtype=float)
    names = ["spearman", "kendall_tau_b", "mae"]
    level_of = {x: i for i, x in enumerate(xs)}
    square = spec.type == "ordinal" and all(c in level_of for c in cols)
    remap = np.zeros((len(cols), len(xs)))
    if square:
        for j, c in enumerate(cols):
            remap[j, level_of[float(c)]] = 1.0
        names += ["linear", "quadratic"]

    def stat(t: FloatArray) -> FloatArray:
        parts = [
            ordinal.spearman(t),
            ordinal.kendall_tau_b(t),
            ordinal.mean_absolute_error(t, np.asarray(xs), cols),
        ]
        if square:
            sq = t @ remap
            parts += [kappa.cohen_kappa(sq, "linear"), kappa.cohen_kappa(sq, "quadratic")]
        return np.stack(parts)

    figs, fallback = _figures(names, table, stat, opts)
    out["spearman"], out["kendall_tau_b"], out["mae"] = (
        figs["spearman"],
        figs["kendall_tau_b"],
        figs["mae"],
    )
    if square:
        out["weighted_kappa"] = {"linear": figs["linear"], "quadratic": figs["quadratic"]}
        out["confusion"] = {
            "labels": [_key(v) for v in rows],
            "check_labels": [_key(v) for v in rows],
            "matrix": (table.counts() @ remap).astype(int).tolist(),
        }
    return fallback


def _category(
    spec: LabelSpec,
    human: Sequence[Any],
    outcome: Sequence[Any],
    opts: ReportOptions,
    out: dict[str, Any],
) -> list[str]:
    extra = sorted({_key(o) for o in outcome} - {_key(v) for v in spec.levels})
    levels = tuple(_key(v) for v in spec.levels) + tuple(extra)
    table = build_table([_key(h) for h in human], [_key(o) for o in outcome], levels, levels)
    out["confusion"] = _confusion(table)
    figs, fallback = _figures(
        ("accuracy", "kappa"),
        table,
        lambda t: np.stack([binary.accuracy(t), kappa.cohen_kappa(t)]),
        opts,
    )
    out.update(figs)
    return fallback


def _check_vs_each(
    spec: LabelSpec, pairs: _Pairs, outcome: Sequence[Any], names: Sequence[str],
    values: Sequence[Any], opts: ReportOptions,
) -> list[dict[str, Any]]:  # fmt: skip
    """The check against each person alone: kappa (bool, category) or Spearman's rho."""
    out = []
    for name in names:
        mine = [
            (dict(item.labels)[name], check)
            for item, check in zip(pairs.items, outcome, strict=False)
            if name in dict(item.labels)
        ]
        if len(mine) < 2:
            continue
        if spec.type in ("bool", "category"):
            keyed = [_key(v) for v in values]
            cols = sorted({_key(c) for _, c in mine} | set(keyed))
            rows = keyed + [c for c in cols if c not in keyed]
            table = build_table([_key(h) for h, _ in mine], [_key(c) for _, c in mine], rows, rows)
            stat, figure = (lambda t: kappa.cohen_kappa(t)[None]), "kappa"
        else:
            xs = dict(zip(spec.levels, _numeric_levels(spec), strict=True)) if spec.levels else {}
            table = build_table([float(xs.get(h, h)) for h, _ in mine], [float(c) for _, c in mine])
            stat, figure = (lambda t: ordinal.spearman(t)[None]), "spearman"
        fig = bootstrap_table(table, stat, opts.bootstrap).figures[0]
        out.append({"annotator": name, "n": len(mine), figure: fig})
    return out


def _annotators(
    spec: LabelSpec,
    pairs: _Pairs,
    all_items: Sequence[LabelledItem],
    opts: ReportOptions,
    outcome: Sequence[Any] = (),
) -> dict[str, Any] | None:
    units = [dict(item.labels) for item in all_items]
    names = sorted({a for u in units for a in u})
    if len(names) < 2 or not any(len(u) > 1 for u in units):
        return None
    if spec.type == "bool":
        values: list[Any] = [False, True]
    elif spec.type in ("ordinal", "category"):
        values = list(spec.levels)
    else:
        values = sorted({v for u in units for v in u.values()})
    result: dict[str, Any] = {
        "names": names,
        "alpha": krippendorff_alpha(units, values, spec.type, opts.bootstrap),
    }
    pairwise = []
    kappa_stat = lambda t: kappa.cohen_kappa(t)[None]  # noqa: E731
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = [u for u in units if a in u and b in u]
            if len(both) < 2:
                continue
            keyed = [_key(v) for v in values]
            table = build_table(
                [_key(u[a]) for u in both], [_key(u[b]) for u in both], keyed, keyed
            )
            fig = bootstrap_table(table, kappa_stat, opts.bootstrap).figures[0]
            pairwise.append({"a": a, "b": b, "n": len(both), "kappa": fig})
    result["pairwise_kappa"] = pairwise
    result["check_vs_each"] = _check_vs_each(spec, pairs, outcome, names, values, opts)
    return result


def agreement_report(
    items: Sequence[LabelledItem], spec: LabelSpec, options: ReportOptions | None = None
) -> dict[str, Any]:
    """The report of a check's results on labelled ``items`` (JSON-ready, figures as dicts)."""
    opts = options or ReportOptions()
    pairs, no_majority, unscored = _pairs(items)
    out: dict[str, Any] = {
        "labels": spec.name,
        "label_type": spec.type,
        "n": len(pairs.items),
        "per_class": _per_class(spec, pairs.human),
        "skipped": {"no_majority": no_majority, "no_check_result": unscored},
        "seed": opts.seed,
        "intervals": {
            "confidence": opts.confidence,
            "n_resamples": opts.n_resamples,
            "method": "BCa",
            "fallback": [],
        },
    }
    fallback: list[str] = []
    outcome: list[Any] = []
    link_threshold: float | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pairs.items:
            fallback, outcome, link_threshold = _statistics(spec, pairs, opts, out)
        annot = _annotators(spec, pairs, items, opts, outcome)
    if annot is not None:
        out["annotators"] = annot
    out["intervals"]["fallback"] = fallback
    missing = {
        cls: opts.min_per_class - count
        for cls, count in out["per_class"].items()
        if count < opts.min_per_class
    }
    out["verdict"] = TOO_FEW if missing else ENOUGH
    out["missing"] = missing
    out["min_per_class"] = opts.min_per_class
    out["message"] = (
        "too few labels: "
        + ", ".join(f"{n} more {c!r}" for c, n in missing.items())
        + f" (at least {opts.min_per_class} per class)"
        if missing
        else f"enough labels: at least {opts.min_per_class} in every class"
    )
    out["disagreements"] = _disagreements(spec, pairs, outcome, link_threshold, opts)
    report: dict[str, Any] = _jsonable(out)
    return report


def _statistics(
    spec: LabelSpec, pairs: _Pairs, opts: ReportOptions, out: dict[str, Any]
) -> tuple[list[str], list[Any], float | None]:
    scores = [item.score for item in pairs.items]
    passed = [item.passed for item in pairs.items]
    fallback: list[str] = []
    if spec.type == "bool":
        human = [bool(h) for h in pairs.human]
        numeric = all(_is_number(s) for s in scores)
        chosen = None
        if numeric:
            fallback += _float_check(human, [float(s) for s in scores], opts, out)[0]
            chosen = out["suggested_threshold"]["value"]
        if all(p is not None for p in passed):
            outcome = [bool(p) for p in passed]
            fallback += _binary(human, outcome, opts, out)
            out["outcome_from"] = "pass flag"
        elif all(isinstance(s, bool) for s in scores):
            outcome = [bool(s) for s in scores]
            fallback += _binary(human, outcome, opts, out)
            out["outcome_from"] = "score"
        elif numeric and chosen is not None:
            outcome = [float(s) >= chosen for s in scores]
            dev = threshold.split_dev(np.asarray(human, bool), opts.seed, opts.dev_fraction)
            test = [i for i in range(len(human)) if not dev[i]]
            fallback += _binary([human[i] for i in test], [outcome[i] for i in test], opts, out)
            out["outcome_from"] = "suggested threshold, on the test split"
        else:
            raise ValueError(
                "the check's scores are neither pass/fail nor numbers: "
                "it cannot be compared with bool labels"
            )
        return fallback, outcome, chosen
    if spec.type in ("ordinal", "float"):
        if not all(_is_number(s) or isinstance(s, bool) for s in scores):
            raise ValueError(f"{spec.type} labels need a check with numeric scores")
        fallback += _ordinal(spec, pairs.human, scores, opts, out)
        return fallback, [float(s) for s in scores], None
    fallback += _category(spec, pairs.human, scores, opts, out)
    return fallback, [_key(s) for s in scores], None


def _disagreements(
    spec: LabelSpec, pairs: _Pairs, outcome: Sequence[Any], cut: float | None, opts: ReportOptions
) -> list[dict[str, Any]]:
    rows: list[tuple[float, dict[str, Any]]] = []
    xs = (
        dict(zip(spec.levels, _numeric_levels(spec), strict=True)) if spec.type == "ordinal" else {}
    )
    for item, human, share, check in zip(
        pairs.items, pairs.human, pairs.share, outcome, strict=False
    ):
        if spec.type in ("ordinal", "float"):
            x = xs.get(human, human) if spec.type == "ordinal" else float(human)
            error = abs(float(x) - float(check))
            if error < (1.0 if spec.type == "ordinal" else 1e-9):
                continue
            confidence = error
        else:
            agree = check == human if spec.type == "bool" else check == _key(human)
            if agree:
                continue
            if _is_number(item.score) and cut is not None:
                confidence = abs(float(item.score) - cut)
            else:
                confidence = share
        rows.append(
            (
                confidence,
                {
                    "target": dict(item.target),
                    "human": human,
                    "annotators": len(item.labels),
                    "check": item.score,
                    "passed": item.passed,
                    "confidence": round(confidence, 6),
                    "link": item.link,
                },
            )
        )
    rows.sort(key=lambda r: -r[0])
    return [r for _, r in rows[: opts.max_disagreements]]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Figure):
        return value.as_json()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
