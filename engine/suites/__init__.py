"""Suites and gates: ``scorebox.yaml`` (:mod:`engine.suites.file`), local runs of check
files and built-ins without a server (:mod:`engine.suites.local`), reading rows from data
files (:mod:`engine.suites.data`), ``engine.testing``'s assertions
(:mod:`engine.suites.testing`) and the ``pytest --scorebox`` plugin
(:mod:`engine.suites.pytest_plugin`). The CLI's ``scorebox run`` is a thin edge over it."""
