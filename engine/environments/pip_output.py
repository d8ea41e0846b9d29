"""What pip's output means, said to a tenant and to an operator. Pure.

A build's failure reaches the tenant (``GET /v1/checks/{ref}/environment``, every row's
``sandbox_error``): it names the requirement and the fix, calls the index "the package
index" and carries no URL (an index URL may hold a token), no host path. The operator's
build log keeps pip's output with every URL's credentials masked.
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Iterable, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from engine.environments.spec import SANDBOX_PYTHON
from engine.redact import mask_credentials

#: What pip prints when the index (or the proxy before it) could not be reached or stalled:
#: a retryable failure, checked before NO_WHEEL, since pip then also says it found no
#: matching distribution.
INDEX_UNREACHABLE = re.compile(
    r"NewConnectionError|ConnectTimeoutError|ReadTimeoutError|Connection refused|"
    r"Max retries exceeded|ProxyError|Temporary failure in name resolution|"
    r"Name or service not known|Could not fetch URL|connection broken|RemoteDisconnected|"
    r"IncompleteRead|HTTP error 5\d\d|Read timed out",
    re.IGNORECASE,
)
NO_WHEEL = re.compile(
    r"(?:No matching distribution found for|"
    r"Could not find a version that satisfies the requirement) (?P<req>\S+)"
)
_FROM_VERSIONS = re.compile(r"\(from versions: (?P<versions>[^)]*)\)")
_AVAILABLE = re.compile(r"Available versions: (?P<versions>.*)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>)]*[^\s'\"<>):;,.]")
#: Versions named either side of a pin that does not exist.
NEAREST = 2
PACKAGE_INDEX = "the package index"


def for_tenant(text: str, paths: Iterable[str] = ()) -> str:
    """``text`` with every URL said as "the package index" and host ``paths`` removed."""
    text = _URL.sub(PACKAGE_INDEX, mask_credentials(text))
    for path in sorted((p for p in paths if p), key=len, reverse=True):
        text = text.replace(path, "<build folder>")
    return text


def listed_versions(output: str) -> list[Version]:
    """The versions pip says it found, ``(from versions: 0.1, 0.2)``; [] for none."""
    found = _FROM_VERSIONS.search(output)
    if not found:
        return []
    versions = []
    for text in found.group("versions").split(","):
        with contextlib.suppress(InvalidVersion):
            versions.append(Version(text.strip()))
    return sorted(set(versions))


def nearest_versions(wanted: str, versions: Sequence[Version]) -> list[Version]:
    """Up to :data:`NEAREST` versions either side of ``wanted`` among sorted ``versions``
    (releases only, unless ``wanted`` is a pre-release or there are none)."""
    try:
        target: Version | None = Version(wanted)
    except InvalidVersion:
        target = None
    releases = [v for v in versions if not v.is_prerelease]
    if releases and not (target and target.is_prerelease):
        versions = releases
    at = bisect.bisect_left(versions, target) if target else len(versions)
    return list(versions[max(0, at - NEAREST) : at + NEAREST])


def available_versions(output: str, returncode: int, name: str) -> list[Version] | None:
    """Every version ``pip index versions NAME`` lists (sdists too); [] for no such
    package, None when its answer says nothing (the index could not be asked)."""
    found = _AVAILABLE.search(output)
    if found:
        versions = []
        for text in found.group("versions").split(","):
            with contextlib.suppress(InvalidVersion):
                versions.append(Version(text.strip()))
        return sorted(set(versions))
    unknown = re.compile(rf"No matching distribution found for {re.escape(name)}\s*$", re.M)
    if returncode != 0 and unknown.search(output):
        return []
    return None


def no_wheel_message(
    output: str, requirements: Sequence[str], available: Sequence[Version] | None = None
) -> str:
    """What pip's "no matching distribution" means, naming the requirement and the fixes.

    ``available``: every version the index has of that distribution, sdists included
    (:func:`available_versions`; None: unknown). When none admits the requirement
    (``textstat==99.0``), it is a wrong pin, said as such with the nearest versions; a
    distribution the index does not have is a wrong name; otherwise the versions it
    admits have no wheel for the sandbox (an sdist-only package).
    """
    found = NO_WHEEL.search(output)
    what = found.group("req") if found else ", ".join(requirements)
    try:
        requirement: Requirement | None = Requirement(what)
    except InvalidRequirement:
        requirement = None
    if requirement is not None and available is not None:
        name = requirement.name
        if not available:
            return (
                f"no distribution `{name}` on {PACKAGE_INDEX} (No matching distribution found "
                f"for {what}): check the name in `dependencies`"
            )
        admitted = [v for v in available if requirement.specifier.contains(v, prereleases=True)]
        if not admitted:
            pinned = [s.version for s in requirement.specifier]
            near = nearest_versions(pinned[0] if pinned else "", available)
            return (
                f"no version of `{name}` matching `{what}` on {PACKAGE_INDEX} (No matching "
                f"distribution found; it has {len(available)} version(s), nearest: "
                f"{', '.join(str(v) for v in near)}): fix the version in `dependencies`"
            )
    return (
        f"no wheel of `{what}` for Python {SANDBOX_PYTHON} on this platform (scorebox installs "
        "wheels only, so no package's build code runs): an operator can put a wheel in "
        "SCOREBOX_PACKAGES_WHEELHOUSE, or build one from the sdist with "
        f"`scorebox env wheel '{what}'` (offline, in a hardened container)"
    )
