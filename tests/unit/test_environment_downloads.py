"""What pip downloaded is checked before anything is installed: every resolved
distribution (dependencies too) against the operator's rules, spelled canonically on both
sides, and the wheels' unpacked size from their zip directories (a zip bomb)."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.environments import EnvironmentRecord, Environments, PackageRules, read_block
from engine.environments.downloaded import check_downloaded
from engine.errors import EnvironmentBuildError
from engine.settings import Settings


def _wheel(folder: Path, name: str, members: dict[str, int]) -> Path:
    """A wheel whose members are ``size`` bytes of zeros each (deflated: tiny)."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, size in members.items():
            archive.writestr(member, b"\0" * size)
    return path


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("rt4_under_score", "rt4-under-score"),
        ("rt4-under-score", "RT4_Under.Score"),
        ("Evil.Pkg*", "evil-pkg-extra"),
    ],
)
def test_deny_globs_and_names_are_both_canonical(pattern: str, name: str) -> None:
    rules = PackageRules.of([], [pattern])
    assert rules.refusal(name) is not None
    source = f'# /// script\n# dependencies = ["{name}"]\n# ///\n'
    [problem] = read_block(source, rules).problems
    assert problem.code == "package-not-allowed"


def test_the_allow_list_is_canonical_too() -> None:
    rules = PackageRules.of(["Jsonpath_NG"], [])
    assert rules.refusal("jsonpath-ng") is None
    assert rules.refusal("jsonpath.ng") is None
    assert rules.refusal("other") is not None


def test_a_denied_dependency_is_refused_before_install(tmp_path: Path) -> None:
    wheels = [
        _wheel(tmp_path, "python_slugify", {"slugify/__init__.py": 10}),
        _wheel(tmp_path, "text_unidecode", {"text_unidecode/__init__.py": 10}),
    ]
    rules = PackageRules.of([], ["text_unidecode"])
    with pytest.raises(EnvironmentBuildError) as refused:
        check_downloaded(wheels, ["python-slugify"], rules, 64)
    message = str(refused.value)
    assert "the operator denies `text-unidecode`" in message
    assert "resolved as a dependency of python-slugify" in message


def test_a_zip_bomb_is_refused_from_its_central_directory(tmp_path: Path) -> None:
    bomb = _wheel(tmp_path, "bomb", {f"bomb/{i}.bin": 4 * 1024 * 1024 for i in range(8)})
    assert bomb.stat().st_size < 1024 * 1024  # 32 MB unpacked, well under 1 MB packed
    with pytest.raises(EnvironmentBuildError, match=r"unpack to more .*SCOREBOX_ENV_MAX_MB=16"):
        check_downloaded([bomb], ["bomb"], PackageRules(), 16)
    assert check_downloaded([bomb], ["bomb"], PackageRules(), 64) == 32 * 1024 * 1024


class NoInstall:
    """An installer that must never be reached."""

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        return None

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        raise AssertionError("installed despite the checks")

    def list_environments(self) -> list[EnvironmentRecord]:
        return []

    def remove_environment(self, key: str) -> bool:
        return False


def test_a_build_stops_between_download_and_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", env_max_mb=16)
    environments = Environments(settings, NoInstall())

    def fake_pip(command: list[str], log_file: Path, step: str) -> str:
        dest = Path(command[command.index("--dest") + 1])
        _wheel(dest, "bomb", {f"bomb/{i}.bin": 4 * 1024 * 1024 for i in range(8)})
        return ""

    monkeypatch.setattr(environments, "_pip", fake_pip)
    with pytest.raises(EnvironmentBuildError, match="unpack to more than"):
        environments.ensure(["bomb"])


def test_a_dependency_the_operator_denies_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", packages_deny=["Text_Unidecode"])
    environments = Environments(settings, NoInstall())

    def fake_pip(command: list[str], log_file: Path, step: str) -> str:
        dest = Path(command[command.index("--dest") + 1])
        _wheel(dest, "python_slugify", {"slugify/__init__.py": 10})
        _wheel(dest, "text_unidecode", {"text_unidecode/__init__.py": 10})
        return ""

    monkeypatch.setattr(environments, "_pip", fake_pip)
    with pytest.raises(EnvironmentBuildError, match=r"denies `text-unidecode`.*a dependency"):
        environments.ensure(["python-slugify==8.0.4"])
