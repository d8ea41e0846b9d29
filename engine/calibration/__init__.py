"""Can this check be trusted? Agreement between a check and human labels.

A pure room: numpy, scipy and krippendorff only, no storage, no HTTP. The edges
(``engine.api.routes.agreement``, ``engine.cli.agreement``) load labels and results and
call :func:`engine.calibration.report.agreement_report`.

One idea a module:

- ``deps``: the optional extra's imports (``scorebox[calibration]``), loaded lazily;
- ``labels``: a label name's declared type, and values checked against it;
- ``table``: labelled pairs as a contingency table (human level x check value), the
  shape every statistic below and the bootstrap work on;
- ``kappa``: Cohen's kappa, unweighted and weighted (linear, quadratic);
- ``binary``: the confusion of a pass/fail check: TPR, TNR, accuracy, F1, MCC;
- ``ordinal``: Spearman, Kendall tau-b and MAE against ordinal or float labels;
- ``threshold``: ROC, AUC, the threshold sweep and a threshold chosen on a seeded split;
- ``annotators``: Krippendorff's alpha, pairwise kappa, the majority label;
- ``intervals``: Wilson intervals and the seeded BCa bootstrap;
- ``prevalence``: Rogan-Gladen corrected pass rates with their interval;
- ``report``: the agreement report, with the field names of the public JSON;
- ``gate``: ``--min-agreement`` parsed and judged against a report;
- ``holdout``: the seeded part of the labelled rows held back from the generator.
"""
