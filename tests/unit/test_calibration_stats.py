"""The agreement statistics: textbook cases (cited), scikit-learn and scipy on random data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]
from sklearn import metrics  # type: ignore[import-untyped]

from engine.calibration import binary, kappa, ordinal, threshold
from engine.calibration.annotators import _alpha, _coincidences, krippendorff_alpha, majority
from engine.calibration.intervals import Bootstrap, bootstrap_table, wilson
from engine.calibration.prevalence import rogan_gladen
from engine.calibration.table import build_table, counts_from_codes


def test_cohen_kappa_textbook_two_by_two() -> None:
    """Wikipedia, "Cohen's kappa", worked example: 50 grant proposals read by A and B.

    Both yes 20, A yes B no 5, A no B yes 10, both no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    """
    table = np.array([[20.0, 5.0], [10.0, 15.0]])
    assert kappa.cohen_kappa(table) == pytest.approx(0.4)


def test_cohen_kappa_fleiss_cohen_everitt_1969_table() -> None:
    """Fleiss, Cohen & Everitt (1969), Psychol. Bull. 72(5):323, Table 1 (proportions, 3 classes).

    Cell proportions .53 .05 .02 / .11 .14 .05 / .01 .06 .03 give unweighted kappa = .429
    (the paper's value).
    """
    table = np.array([[0.53, 0.05, 0.02], [0.11, 0.14, 0.05], [0.01, 0.06, 0.03]]) * 100
    assert kappa.cohen_kappa(table) == pytest.approx(0.429, abs=5e-4)


def test_weighted_kappa_by_hand() -> None:
    """Cohen (1968): kappa_w = 1 - sum(w O) / sum(w E), worked here on a 3 x 3 table.

    Rows (10, 0, 0 / 2, 6, 2 / 0, 2, 8), n = 30; row totals 10 10 10, column totals 12 8 10.
    Linear weights 0, .5, 1. Observed: sum(w O) = 3 x (2 x .5) = 3. Expected cells are
    10 c_j / 30, and the weights of column j sum to 1.5, 1, 1.5: sum(w E) = (12 x 1.5 + 8 x 1
    + 10 x 1.5) / 3 = 41 / 3. kappa_w = 1 - 3 / (41 / 3) = 32 / 41.
    """
    table = np.array([[10.0, 0, 0], [2, 6, 2], [0, 2, 8]])
    assert kappa.cohen_kappa(table, "linear") == pytest.approx(32 / 41)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_sklearn(weights: kappa.Weights, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, 200)
    b = np.clip(a + rng.integers(-2, 3, 200), 0, 4)
    t = build_table(list(a), list(b), range(5), range(5)).counts()
    assert kappa.cohen_kappa(t, weights) == pytest.approx(
        metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(5))
def test_binary_statistics_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h = rng.random(300) < 0.4
    c = np.where(rng.random(300) < 0.75, h, ~h)
    t = build_table(list(h), list(c), (False, True), (False, True)).counts()
    assert binary.tpr(t) == pytest.approx(metrics.recall_score(h, c))
    assert binary.tnr(t) == pytest.approx(metrics.recall_score(~h, ~c))
    assert binary.accuracy(t) == pytest.approx(metrics.accuracy_score(h, c))
    assert binary.f1(t) == pytest.approx(metrics.f1_score(h, c))
    assert binary.mcc(t) == pytest.approx(metrics.matthews_corrcoef(h, c))
    assert (t == metrics.confusion_matrix(h, c)).all()  # rows human, columns check


@pytest.mark.parametrize("seed", range(5))
def test_auc_and_sweep_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h = rng.random(400) < 0.5
    s = np.round(h * 0.2 + rng.random(400), 2)  # rounded: ties between classes
    table = build_table(list(h), list(s), (False, True))
    assert threshold.auc(table.counts()) == pytest.approx(metrics.roc_auc_score(h, s))
    points = threshold.roc_sweep(table.counts(), table.check_values)
    fpr, tpr, thr = metrics.roc_curve(h, s, drop_intermediate=False)
    ours = {p.threshold: (p.tpr, 1 - p.tnr) for p in points}
    for f, t, th in zip(fpr[1:], tpr[1:], thr[1:], strict=True):
        assert ours[th] == pytest.approx((t, f))


@pytest.mark.parametrize("seed", range(5))
def test_rank_correlations_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 6, 250)
    y = np.round(x + rng.normal(0, 1.2, 250), 1)
    t = build_table(list(x), list(y)).counts()
    assert ordinal.spearman(t) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert ordinal.kendall_tau_b(t) == pytest.approx(stats.kendalltau(x, y).statistic)
    cols = np.array(sorted(set(y)))
    assert ordinal.mean_absolute_error(t, np.arange(1.0, 6.0), cols) == pytest.approx(
        metrics.mean_absolute_error(x, y)
    )


def test_wilson_figures_of_the_notes() -> None:
    """Wilson intervals (Wilson 1927): 45/50, 90/100 and 18/20, as computed by hand."""
    for k, n, lo, hi in [(45, 50, 0.786, 0.957), (90, 100, 0.826, 0.945), (18, 20, 0.699, 0.972)]:
        fig = wilson(k, n)
        assert fig.value == pytest.approx(k / n)
        assert fig.ci[0] == pytest.approx(lo, abs=5e-4)
        assert fig.ci[1] == pytest.approx(hi, abs=5e-4)
    assert wilson(0, 0).value is None


def test_rogan_gladen_worked_example() -> None:
    """Rogan & Gladen (1978), delta method: Se 42/52 = .808, Sp 61/68 = .897, p .62 of 5000.

    theta = (.62 + .897 - 1) / (.808 + .897 - 1) = .734, 95 % interval [.617, .850].
    """
    r = rogan_gladen(0.62, 5000, 42 / 52, 61 / 68, 52, 68)
    assert r.value == pytest.approx(0.734, abs=5e-4)
    assert r.ci is not None
    assert r.ci[0] == pytest.approx(0.617, abs=5e-4)
    assert r.ci[1] == pytest.approx(0.850, abs=5e-4)
    # the validate-evaluator skill's example: TPR .92, TNR .88, p .80 -> .85
    assert rogan_gladen(0.8, 10**9, 0.92, 0.88, 10**9, 10**9).value == pytest.approx(0.85)
    # no better than chance: no correction
    assert rogan_gladen(0.5, 100, 0.5, 0.5, 50, 50).value is None


def test_bca_equals_scipy_bca() -> None:
    """The grouped jackknife gives scipy's own BCa interval, to the last digit."""
    rng = np.random.default_rng(3)
    h = rng.integers(0, 2, 80).astype(bool)
    c = np.where(rng.random(80) < 0.8, h, ~h)
    table = build_table(list(h), list(c), (False, True), (False, True))
    ours = bootstrap_table(table, lambda t: kappa.cohen_kappa(t)[None], Bootstrap(7, 999))
    res = stats.bootstrap(
        (table.codes(),),
        lambda x, axis=-1: kappa.cohen_kappa(counts_from_codes(np.moveaxis(x, axis, -1), (2, 2))),
        vectorized=True,
        method="BCa",
        n_resamples=999,
        rng=np.random.default_rng(7),
    )
    assert ours.fallback == []
    assert ours.figures[0].ci == pytest.approx(
        (res.confidence_interval.low, res.confidence_interval.high), abs=1e-12
    )


def test_bootstrap_is_reproducible_by_seed() -> None:
    rng = np.random.default_rng(1)
    h = rng.integers(0, 2, 100).astype(bool)
    c = np.where(rng.random(100) < 0.7, h, ~h)
    table = build_table(list(h), list(c), (False, True), (False, True))
    stat = binary.binary_statistics
    one = bootstrap_table(table, stat, Bootstrap(seed=5, n_resamples=500))
    two = bootstrap_table(table, stat, Bootstrap(seed=5, n_resamples=500))
    other = bootstrap_table(table, stat, Bootstrap(seed=6, n_resamples=500))
    assert one == two
    assert one != other


def test_perfect_agreement_and_one_class() -> None:
    both = build_table([True, False] * 20, [True, False] * 20, (False, True), (False, True))
    res = bootstrap_table(both, binary.binary_statistics, Bootstrap(n_resamples=200))
    assert [f.value for f in res.figures] == [1.0, 1.0, 1.0, 1.0]
    assert res.figures[3].ci == (1.0, 1.0)  # degenerate: every resample is 1
    one = build_table([True] * 40, [True] * 40, (False, True), (False, True))
    figs = bootstrap_table(one, binary.binary_statistics, Bootstrap(n_resamples=200)).figures
    assert figs[0].value == 1.0
    assert figs[3].value is None  # kappa is undefined with one class only
    assert binary.tnr(one.counts()) != binary.tnr(one.counts())  # NaN: no failed item


def test_all_ties() -> None:
    """A check that gives every item the same score: AUC 0.5, no rank correlation."""
    h = [True, False] * 30
    table = build_table(h, [0.5] * 60, (False, True))
    assert threshold.auc(table.counts()) == pytest.approx(0.5)
    assert np.isnan(ordinal.spearman(table.counts()))
    assert np.isnan(ordinal.kendall_tau_b(table.counts()))


def test_majority() -> None:
    top = majority([True, True, False])
    assert top is not None and top[0] is True and top[1] == pytest.approx(2 / 3)
    assert majority([True, False]) is None
    assert majority([]) is None


@pytest.mark.parametrize("label_type", ["bool", "ordinal", "float"])
def test_alpha_matches_krippendorff_with_missing_labels(label_type: str) -> None:
    """Krippendorff's alpha with some annotators missing on some items: the package's value,
    and the coincidence matrix the bootstrap resamples gives the same number."""
    import krippendorff

    rng = np.random.default_rng(0)
    values: list[object] = [False, True] if label_type == "bool" else [1, 2, 3, 4, 5]
    units = []
    for _ in range(60):
        truth = rng.integers(0, len(values))
        unit = {}
        for a in "abc":
            if rng.random() < 0.75:  # each annotator skips a quarter of the items
                unit[a] = values[int(np.clip(truth + rng.integers(-1, 2), 0, len(values) - 1))]
        units.append(unit)
    fig = krippendorff_alpha(units, values, label_type, Bootstrap(n_resamples=300))
    level: Any = {"bool": "nominal", "ordinal": "ordinal", "float": "interval"}[label_type]
    data = np.array([[u.get(a, np.nan) for u in units] for a in "abc"], dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert fig.value == pytest.approx(expected)
    index = {v: i for i, v in enumerate(values)}
    coded = [{a: index[v] for a, v in u.items()} for u in units]
    o = _coincidences(coded, len(values)).sum(axis=0)
    numeric = (
        np.array([float(v) for v in values])  # type: ignore[arg-type]
        if level == "interval"
        else np.arange(len(values), dtype=float)
    )
    assert _alpha(o, numeric, level) == pytest.approx(expected)
    assert fig.ci[0] is not None and fig.ci[0] < fig.value < fig.ci[1]  # type: ignore[operator]
