"""Reading the host's apt sources (one-line and deb822) to find a bookworm mirror."""

from __future__ import annotations

from pathlib import Path

from engine.sandbox.docker.image.constants import DEFAULT_MIRROR, SUITE


def mirrors_from_sources_list(text: str, suite: str = SUITE) -> list[str]:
    """Mirror URIs serving ``suite`` main in one-line ``sources.list`` syntax."""
    mirrors = []
    for raw in text.splitlines():
        fields = raw.split("#", 1)[0].split()
        if not fields or fields[0] != "deb":
            continue
        rest = fields[1:]
        if rest and rest[0].startswith("["):  # options: "[a=b]" or "[ a=b ]"
            while rest and not rest[0].endswith("]"):
                rest = rest[1:]
            rest = rest[1:]
        if len(rest) >= 3 and rest[1] == suite and "main" in rest[2:]:
            mirrors.append(rest[0])
    return mirrors


def _deb822_stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key: str | None = None
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif raw[0] in " \t":
            if key is not None:
                current[key] += " " + raw.strip()
        else:
            name, sep, value = raw.partition(":")
            if sep:
                key = name.strip().lower()
                current[key] = value.strip()
    return stanzas


def mirrors_from_deb822(text: str, suite: str = SUITE) -> list[str]:
    """Mirror URIs serving ``suite`` main in deb822 (``*.sources``) syntax."""
    mirrors = []
    for stanza in _deb822_stanzas(text):
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        if "deb" not in stanza.get("types", "").split():
            continue
        if (
            suite in stanza.get("suites", "").split()
            and "main" in stanza.get("components", "").split()
        ):
            mirrors.extend(stanza.get("uris", "").split())
    return mirrors


def find_mirror(apt_dir: Path, suite: str) -> str | None:
    """The first http(s) mirror serving ``suite`` main in the apt sources under ``apt_dir``."""
    files = [apt_dir / "sources.list"]
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in {".list", ".sources"})
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        parse = mirrors_from_deb822 if path.suffix == ".sources" else mirrors_from_sources_list
        for uri in parse(text, suite):
            if uri.startswith(("http://", "https://")):
                return uri.rstrip("/")
    return None


def apt_sources(apt_dir: Path = Path("/etc/apt")) -> list[str]:
    """``sources.list`` lines for the bootstrapped image, from the host's mirrors when it
    has bookworm ones (first line: the main suite), else deb.debian.org."""
    lines = [f"deb {find_mirror(apt_dir, SUITE) or DEFAULT_MIRROR} {SUITE} main"]
    for suite in (f"{SUITE}-updates", f"{SUITE}-security"):
        mirror = find_mirror(apt_dir, suite)
        if mirror:
            lines.append(f"deb {mirror} {suite} main")
    return lines


def stand_in_control(name: str) -> str:
    """``DEBIAN/control`` of an empty package standing in for ``name`` (see STAND_INS)."""
    return (
        f"Package: {name}\nVersion: 0.0~scorebox1\nArchitecture: all\nSection: misc\n"
        "Priority: optional\nMaintainer: scorebox <noreply@scorebox.invalid>\n"
        f"Description: empty stand-in for {name} in the scorebox sandbox\n"
        " Only needed to build its dependents; kept out of the sandbox image.\n"
    )
