"""Agreement of stored checks with human labels: the glue between storage and the
calibration core (:mod:`engine.calibration`), for the API, the dashboard and online rules.

- :mod:`~engine.agreement.labels`: labels taken in (names declared, values and targets
  checked, all stored or none);
- :mod:`~engine.agreement.report`: a check's labelled rows (and spans) paired with its
  results, and the agreement report over them;
- :mod:`~engine.agreement.spans`: the span side of those pairs (labelled spans a check
  scored online);
- :mod:`~engine.agreement.corrected`: a run's or a rule's pass rates corrected for the
  check's TPR and TNR (Rogan-Gladen);
- :mod:`~engine.agreement.required`: the agreement a check version requires, judged on
  every read, and the refusal of a run whose checks do not meet it.
"""
