"""The import-linter contracts ([tool.importlinter] in pyproject.toml) hold on this tree, and
each kind of violation they exist for breaks them (run on a copy with one bad import)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


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


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        ("engine/catalog.py", "import engine.cli.run", "The library never imports the CLI"),
        ("engine/runs/scoring.py", "import engine.app", "The rooms never import the edges"),
        ("engine/storage/records.py", "import engine.web", "The rooms never import the edges"),
        ("generator/models.py", "import engine.api.schemas", "The generator is an edge"),
        (
            "engine/web/runs.py",
            "import engine.api.routes.runs",
            "The API and the dashboard do not import each other's routes",
        ),
        ("engine/api/routes/score.py", "import engine.web.pages", "API routes do not import"),
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
