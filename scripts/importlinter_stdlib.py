"""An import-linter contract type: these modules import the standard library and nothing
else, except the imports listed as allowed.

pyproject.toml uses it for the part of ``engine.contract`` the sandbox image carries
(``engine/contract/__init__.py``, ``checks.py``, ``restricted.py``): inside the image there
is no pydantic, no SQLAlchemy and no rest of ``engine``. It needs
``include_external_packages = true`` (stdlib modules are then "external" packages in the
graph, named by their top-level name).
"""

from __future__ import annotations

import sys

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class StdlibOnlyContract(Contract):
    """Options: ``modules`` (the modules held to the rule, each as a module, not a package;
    they may import each other, being held to it together) and ``allow`` (``importer ->
    imported`` pairs that may also be imported)."""

    type_name = "stdlib_only"

    modules = fields.SetField(subfield=fields.StringField())
    allow = fields.SetField(subfield=fields.StringField(), required=False, default=set())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        modules: set[str] = set(self.modules)  # type: ignore[call-overload]
        allowed = {
            tuple(part.strip() for part in pair.split("->"))
            for pair in self.allow  # type: ignore[attr-defined]
        }
        missing = sorted(m for m in modules if m not in graph.modules)
        if missing:
            raise ValueError(f"stdlib_only: no module {', '.join(missing)} in the graph")
        broken = []
        for importer in sorted(modules):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                top = imported.split(".")[0]
                if (
                    top in sys.stdlib_module_names
                    or imported in modules
                    or (importer, imported) in allowed
                ):
                    continue
                lines = tuple(
                    d["line_number"]
                    for d in graph.get_import_details(importer=importer, imported=imported)
                )
                broken.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["broken"]:
            where = ", ".join(str(n) for n in item["lines"])
            output.print_error(
                f"{item['importer']} -> {item['imported']} (l. {where}): only the standard "
                "library may be imported here",
                bold=False,
            )
            output.new_line()
