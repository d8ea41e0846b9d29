"""Everything Okareo-shaped: the ``/v0`` routes the unmodified ``okareo`` SDK talks to
(:mod:`engine.okareo.routes`), their schemas, the translation of Okareo's names to
scorebox's (:mod:`engine.okareo.translate`), and the store of what ``/v1`` has no place
for: projects, registered models, scenario sets, test runs (:mod:`engine.okareo.store`,
:mod:`engine.okareo.tables`)."""
