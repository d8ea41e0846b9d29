"""An import-linter contract type: these modules import the standard library and nothing
else, except the imports listed as allowed.

pyproject.toml uses it for what the sandbox image carries (the packages ``engine.contract``
and ``engine.harness``, whole, and ``engine.checks``): inside the image there is no
pydantic, no SQLAlchemy and no rest of ``engine``. It needs
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
    """Options: ``packages`` (packages held to the rule with every module under them, so a
    new file cannot escape it), ``modules`` (single modules held to it), and ``allow``
    (``importer -> imported`` pairs that may also be imported). The modules held to the
    rule may import each other."""

    type_name = "stdlib_only"

    packages = fields.SetField(subfield=fields.StringField(), required=False, default=set())
    modules = fields.SetField(subfield=fields.StringField(), required=False, default=set())
    allow = fields.SetField(subfield=fields.StringField(), required=False, default=set())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        packages: set[str] = set(self.packages)  # type: ignore[call-overload]
        modules: set[str] = set(self.modules) | packages  # type: ignore[call-overload]
        allowed = {
            tuple(part.strip() for part in pair.split("->"))
            for pair in self.allow  # type: ignore[attr-defined]
        }
        missing = sorted(m for m in modules if m not in graph.modules)
        if missing:
            raise ValueError(f"stdlib_only: no module {', '.join(missing)} in the graph")
        for package in packages:
            modules |= graph.find_descendants(package)
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
