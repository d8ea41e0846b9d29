"""The import-linter contracts ([tool.importlinter] in pyproject.toml) hold on this tree, and
each kind of violation they exist for breaks them (run on a copy with bad imports added)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


LAYERS = "One stack of layers"
ACYCLIC = "No cycles between the modules of one package"

#: (file, its module, what it must not import): each a different way out of the stack.
LAYER_VIOLATIONS = [
    ("engine/errors.py", "engine.errors", "engine.tenancy.auth"),  # the kernel, tenancy
    ("engine/storage/records.py", "engine.storage.records", "engine.tenancy.quotas"),
    ("engine/tenancy/quotas.py", "engine.tenancy.quotas", "engine.catalog"),  # tenancy, a room
    ("engine/catalog/__init__.py", "engine.catalog", "engine.runs.service"),  # the catalog, runs
    ("engine/runs/scoring.py", "engine.runs.scoring", "engine.suites.file"),  # runs, suites
    ("engine/storage/run_sql.py", "engine.storage.run_sql", "engine.web"),  # a room, an edge
    ("engine/audit/hooks.py", "engine.audit.hooks", "engine.http.deps"),  # a room, the kit
    ("engine/http/deps.py", "engine.http.deps", "engine.api.routes.score"),  # the kit, an edge
    ("engine/web/runs.py", "engine.web.runs", "engine.api.routes.runs"),  # edge to edge
    ("engine/api/routes/score.py", "engine.api.routes.score", "engine.web.pages"),
    ("engine/okareo/routes/runs.py", "engine.okareo.routes.runs", "engine.api.routes.runs"),
    ("engine/api/routes/judge.py", "engine.api.routes.judge", "engine.app"),  # an edge, the app
    ("engine/app.py", "engine.app", "engine.cli.serve"),  # the app, the CLI
]


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """engine/, generator/, the contract type and pyproject.toml, copied once."""
    target = tmp_path_factory.mktemp("layering")
    skip = shutil.ignore_patterns("__pycache__", "static", "templates", "migrations")
    for package in ("engine", "generator"):
        shutil.copytree(ROOT / package, target / package, ignore=skip)
    (target / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "importlinter_stdlib.py", target / "scripts")
    shutil.copy(ROOT / "pyproject.toml", target)
    return target


def test_the_tree_keeps_every_contract() -> None:
    found = _lint(ROOT)
    assert found.returncode == 0, found.stdout + found.stderr
    assert "0 broken" in found.stdout


def test_the_copy_keeps_every_contract(copy: Path) -> None:
    found = _lint(copy)  # so each failure below is the added import's
    assert found.returncode == 0, found.stdout + found.stderr


def test_the_stack_names_every_import_that_leaves_it(copy: Path) -> None:
    """All at once, on one copy: the layers contract names each import, file and line."""
    originals = {f: (copy / f).read_text(encoding="utf-8") for f, _, _ in LAYER_VIOLATIONS}
    try:
        for path, _, imported in LAYER_VIOLATIONS:
            with (copy / path).open("a", encoding="utf-8") as f:
                f.write(f"\nimport {imported}  # a deliberate violation\n")
        found = _lint(copy)
    finally:
        for path, text in originals.items():
            (copy / path).write_text(text, encoding="utf-8")
    assert found.returncode != 0, found.stdout
    broken = found.stdout.split("Broken contracts", 1)[-1]
    assert LAYERS in broken, found.stdout
    for _, importer, imported in LAYER_VIOLATIONS:
        assert f"- {importer} -> {imported} (l." in broken, (importer, imported, found.stdout)


@pytest.mark.parametrize(
    ("new_files", "users", "contract", "named"),
    [
        # a new room that imports an edge the edge itself uses: a cycle between the two
        (
            {"engine/newroom.py": "import engine.api.routes.score\n"},
            {"engine/api/routes/runs.py": "import engine.newroom"},
            ACYCLIC,
            "No cycles are allowed in engine.",
        ),
        # a new room between a listed room and an edge: the stack sees through it
        (
            {"engine/newroom.py": "import engine.web.pages\n"},
            {"engine/runs/scoring.py": "import engine.newroom"},
            LAYERS,
            "engine.runs is not allowed to import engine.web",
        ),
        # a new module of a listed room is that room's, with nothing importing it yet
        (
            {"engine/runs/newpart.py": "import engine.api.routes.score\n"},
            {},
            LAYERS,
            "- engine.runs.newpart -> engine.api.routes.score (l.",
        ),
    ],
    ids=["cycle-with-an-edge", "between-a-room-and-an-edge", "new-module-of-a-room"],
)
def test_a_new_room_is_held_without_being_listed(
    copy: Path, new_files: dict[str, str], users: dict[str, str], contract: str, named: str
) -> None:
    """No contract lists engine's rooms one by one, and none needs to learn a new one."""
    config = (copy / "pyproject.toml").read_text(encoding="utf-8")
    assert "newroom" not in config
    assert "newpart" not in config
    originals = {f: (copy / f).read_text(encoding="utf-8") for f in users}
    try:
        for path, text in new_files.items():
            (copy / path).write_text(text, encoding="utf-8")
        for path, line in users.items():
            (copy / path).write_text(f"{originals[path]}\n{line}\n", encoding="utf-8")
        found = _lint(copy)
    finally:
        for path in new_files:
            (copy / path).unlink()
        for path, text in originals.items():
            (copy / path).write_text(text, encoding="utf-8")
    assert found.returncode != 0, found.stdout
    broken = found.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, found.stdout
    assert named in broken, found.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        (
            "engine/catalog/__init__.py",
            "import engine.cli.run",
            "The library never imports the CLI",
        ),
        ("generator/models.py", "import engine.api.schemas", "The generator is an edge"),
        ("generator/pipeline.py", "import engine.http.deps", "The generator is an edge"),
        # rooms of one layer may import each other, but never round in a cycle
        ("engine/llm/client.py", "import engine.builtins", ACYCLIC),
        # nor the modules of one room
        ("engine/sandbox/blocks.py", "import engine.sandbox.runner", ACYCLIC),
        (
            "engine/api/routes/judge.py",
            "import generator.pipeline",
            "Only the generation glue and `scorebox check generate` import the generator",
        ),
        (
            "engine/contract/checks.py",
            "import pydantic",
            "What the sandbox image carries imports the standard library alone",
        ),
        (
            "engine/contract/restricted.py",
            "import engine.validation.rules",
            "What the sandbox image carries imports the standard library alone",
        ),
        (
            "engine/harness/supervise.py",
            "import engine.settings",
            "What the sandbox image carries imports the standard library alone",
        ),
    ],
)
def test_a_deliberate_violation_breaks_its_contract(
    copy: Path, module: str, bad_import: str, contract: str
) -> None:
    path = copy / module
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(f"{original}\n{bad_import}  # a deliberate violation\n", encoding="utf-8")
        found = _lint(copy)
    finally:
        path.write_text(original, encoding="utf-8")
    assert found.returncode != 0, found.stdout
    broken = found.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, found.stdout


def test_a_new_module_in_a_carried_folder_is_held_to_the_standard_library(copy: Path) -> None:
    """No list to update: a file added under engine/harness/ is carried and checked."""
    path = copy / "engine" / "harness" / "newcomer.py"
    try:
        path.write_text("import pydantic  # a deliberate violation\n", encoding="utf-8")
        found = _lint(copy)
    finally:
        path.unlink()
    assert found.returncode != 0, found.stdout
    broken = found.stdout.split("Broken contracts", 1)[-1]
    assert "engine.harness.newcomer -> pydantic" in broken, found.stdout


def test_the_image_contract_holds_every_folder_the_image_carries() -> None:
    """The stdlib-only contract names exactly the engine folders and modules the sandbox
    image carries."""
    import tomllib

    from engine.sandbox.docker.image.constants import CARRIED_MODULES, CARRIED_PACKAGES

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(
        c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "stdlib_only"
    )
    assert set(contract["packages"]) == {"engine." + name for name in CARRIED_PACKAGES}
    assert set(contract["modules"]) == {
        "engine." + name.removesuffix(".py").replace("/", ".") for name in CARRIED_MODULES
    }
