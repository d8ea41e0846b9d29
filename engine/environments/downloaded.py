"""Checks on the wheels pip resolved, on the host, after download and before install.

The allow/deny rules at upload see only the names a check declares; what pip resolves
also brings their dependencies, so every downloaded wheel's distribution is checked
again here (a denied package never arrives as a dependency). A wheel is a zip whose
central directory states each member's uncompressed size: their sum is checked against
SCOREBOX_ENV_MAX_MB before anything is unpacked (a 1 MB zip bomb that would write 1 GB is
refused here; the install container's bounded disk is the second wall).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from engine.environments.spec import PackageRules
from engine.errors import EnvironmentBuildError

FIX_SIZE = "declare fewer or smaller packages, or ask the operator to raise the limit"


def check_downloaded(
    wheels: Sequence[Path], declared: Sequence[str], rules: PackageRules, max_mb: int
) -> int:
    """Refuse a denied distribution or a size past ``max_mb``; the unpacked total in bytes."""
    limit = max_mb * 1024 * 1024
    packed = sum(path.stat().st_size for path in wheels)
    if packed > limit:
        raise EnvironmentBuildError(
            f"its wheels alone are {packed / 1e6:.1f} MB, past SCOREBOX_ENV_MAX_MB={max_mb}: "
            f"{FIX_SIZE}"
        )
    unpacked = 0
    for path in wheels:
        try:
            name = parse_wheel_filename(path.name)[0]
        except (InvalidWheelFilename, InvalidVersion) as exc:
            raise EnvironmentBuildError(f"pip fetched {path.name}, not a wheel: refused") from exc
        refusal = rules.refusal(name)
        if refusal is not None:
            raise EnvironmentBuildError(
                f"{refusal.rsplit('): ', 1)[0]}): `{name}` was resolved as a dependency of "
                f"{', '.join(declared)}; declare packages that do not need it, or ask the "
                "operator"
            )
        try:
            with zipfile.ZipFile(path) as archive:
                unpacked += sum(member.file_size for member in archive.infolist())
        except (zipfile.BadZipFile, OSError) as exc:
            raise EnvironmentBuildError(f"{path.name} is not a readable wheel: {exc}") from exc
        if unpacked > limit:
            raise EnvironmentBuildError(
                f"its wheels unpack to more than {unpacked / 1e6:.1f} MB (their zip "
                f"directories say so; {path.name} among them), past SCOREBOX_ENV_MAX_MB="
                f"{max_mb}: {FIX_SIZE}"
            )
    return unpacked
