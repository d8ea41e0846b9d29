"""A check's PEP 723 block: parsed, validated, normalised and keyed. Pure.

The block is found with PEP 723's reference regular expression and read with ``tomllib``;
each entry of ``dependencies`` is a :class:`packaging.requirements.Requirement`. Every
mistake is a :class:`BlockProblem` with a 1-based line and column in the check's source,
so validation can report it like any other issue.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name, canonicalize_version
from packaging.version import InvalidVersion, Version

#: PEP 723's reference regular expression (https://peps.python.org/pep-0723/).
BLOCK_REGEX = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
#: The sandbox image's Python (Debian bookworm's python3); ``requires-python`` must admit it.
SANDBOX_PYTHON = "3.11.2"
#: Keys PEP 723 defines in a ``script`` block.
BLOCK_KEYS = frozenset({"dependencies", "requires-python", "tool"})
DECLARE_HINT = (
    "declare it in a PEP 723 block at the top of the file:\n"
    '# /// script\n# dependencies = ["NAME"]\n# ///'
)


@dataclass(frozen=True)
class BlockProblem:
    """One mistake in a PEP 723 block, at a 1-based position of the check's source."""

    code: str  # "dependencies-invalid" or "package-not-allowed"
    message: str
    line: int
    col: int


def canonical_glob(pattern: str) -> str:
    """A name glob spelled like a PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", pattern.strip().lower())


@dataclass(frozen=True)
class PackageRules:
    """The operator's allow/deny globs over canonical distribution names (deny wins)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def of(cls, allow: Sequence[str], deny: Sequence[str]) -> PackageRules:
        """Rules from SCOREBOX_PACKAGES_ALLOW / SCOREBOX_PACKAGES_DENY values, their globs
        canonical like the names they match (``rt4_under_score`` denies ``rt4-under-score``)."""
        return cls(tuple(canonical_glob(p) for p in allow), tuple(canonical_glob(p) for p in deny))

    def refusal(self, name: str) -> str | None:
        """Why ``name`` may not be declared, or None."""
        canonical = canonicalize_name(name)
        for pattern in self.deny:
            if fnmatch.fnmatchcase(canonical, pattern):
                return (
                    f"the operator denies `{canonical}` (SCOREBOX_PACKAGES_DENY matches "
                    f"{pattern!r}): remove it from `dependencies`"
                )
        if self.allow and not any(fnmatch.fnmatchcase(canonical, p) for p in self.allow):
            return (
                f"`{canonical}` is not on the operator's allow list (SCOREBOX_PACKAGES_ALLOW: "
                f"{', '.join(self.allow)}): ask the operator to allow it"
            )
        return None


@dataclass(frozen=True)
class Declared:
    """What a check's block declares: normalised requirements, or the problems found."""

    present: bool = False
    requirements: tuple[str, ...] = ()  # normalised, sorted, one per distribution spec
    requires_python: str | None = None
    problems: tuple[BlockProblem, ...] = ()
    line: int = 0  # 1-based line of `# /// script`, 0 without a block
    names: frozenset[str] = field(default_factory=frozenset)  # canonical distribution names

    @property
    def ok(self) -> bool:
        """A block that builds: present, no problem, and at least one requirement."""
        return self.present and not self.problems and bool(self.requirements)


def read_block(source: str, rules: PackageRules | None = None) -> Declared:
    """Parse the ``script`` block of ``source`` (none: ``Declared(present=False)``)."""
    matches = [m for m in BLOCK_REGEX.finditer(source) if m.group("type") == "script"]
    if not matches:
        return Declared()
    first = matches[0]
    line = source.count("\n", 0, first.start()) + 1
    if len(matches) > 1:
        second = source.count("\n", 0, matches[1].start()) + 1
        return _problem(
            line, second, 1, f"a second `# /// script` block (first at line {line}): keep one"
        )
    content = "".join(
        text[2:] if text.startswith("# ") else text[1:]
        for text in first.group("content").splitlines(keepends=True)
    )
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        toml_line, toml_col = _toml_position(str(exc), content)
        return _problem(
            line,
            line + toml_line,
            toml_col + 2,
            f"the `# /// script` block is not valid TOML: {exc}",
        )
    problems: list[BlockProblem] = []
    block_lines = content.splitlines()

    def where(needle: str) -> tuple[int, int]:
        for index, text in enumerate(block_lines):
            col = text.find(needle)
            if col >= 0:
                return line + 1 + index, col + 3
        return line, 1

    for key in data:
        if key not in BLOCK_KEYS:
            at = where(key)
            problems.append(
                BlockProblem(
                    "dependencies-invalid",
                    f"`{key}` is not a PEP 723 key: use `dependencies`, `requires-python` "
                    "or `tool`",
                    *at,
                )
            )
    requires_python = data.get("requires-python")
    if requires_python is not None:
        at = where("requires-python")
        if not isinstance(requires_python, str):
            problems.append(
                BlockProblem("dependencies-invalid", "`requires-python` must be a string", *at)
            )
            requires_python = None
        else:
            try:
                admits = SpecifierSet(requires_python).contains(SANDBOX_PYTHON)
            except InvalidSpecifier as exc:
                problems.append(
                    BlockProblem("dependencies-invalid", f"`requires-python`: {exc}", *at)
                )
            else:
                if not admits:
                    problems.append(
                        BlockProblem(
                            "dependencies-invalid",
                            f"`requires-python = {requires_python!r}` excludes the sandbox's "
                            f"Python {SANDBOX_PYTHON}: widen it (e.g. `>=3.11`) or drop it",
                            *at,
                        )
                    )
    raw = data.get("dependencies", [])
    normalised: dict[str, None] = {}
    names: set[str] = set()
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        problems.append(
            BlockProblem(
                "dependencies-invalid",
                '`dependencies` must be a list of strings, e.g. `dependencies = ["textstat"]`',
                *where("dependencies"),
            )
        )
        raw = []
    for entry in raw:
        at = where(entry)
        try:
            requirement = Requirement(entry)
        except InvalidRequirement as exc:
            problems.append(
                BlockProblem(
                    "dependencies-invalid",
                    f"{entry!r} is not a valid requirement: {exc}: write `name`, `name==1.2` or "
                    "`name>=1.2`",
                    *at,
                )
            )
            continue
        if requirement.url:
            problems.append(
                BlockProblem(
                    "dependencies-invalid",
                    f"{entry!r} is a direct URL reference: only packages from the index or the "
                    "operator's wheelhouse can be declared; name the package and a version",
                    *at,
                )
            )
            continue
        refusal = (rules or PackageRules()).refusal(requirement.name)
        if refusal is not None:
            problems.append(BlockProblem("package-not-allowed", refusal, *at))
            continue
        requirement.name = canonicalize_name(requirement.name)
        names.add(requirement.name)
        normalised[str(requirement)] = None
    return Declared(
        present=True,
        requirements=canonical_requirements(normalised),
        requires_python=requires_python if isinstance(requires_python, str) else None,
        problems=tuple(problems),
        line=line,
        names=frozenset(names),
    )


#: Operators whose version may lose trailing ``.0``s without changing what they admit
#: (``>=0`` and ``>=0.0`` are one bound); ``~=`` counts its release segments, ``===`` is
#: a string, and a wildcard keeps its prefix.
_ZERO_PADDED = frozenset({"==", "!=", "<", "<=", ">", ">="})


def canonical_specifier(specifier: Specifier) -> str:
    """``>=0.0`` -> ``>=0``; ``==01.2`` -> ``==1.2``; ``~=1.0``, ``===x``, ``==1.*`` kept."""
    operator, version = specifier.operator, specifier.version
    if operator in _ZERO_PADDED and not version.endswith(".*"):
        with contextlib.suppress(InvalidVersion):
            version = canonicalize_version(Version(version), strip_trailing_zero=True)
    elif operator == "~=":
        with contextlib.suppress(InvalidVersion):
            version = str(Version(version))
    return f"{operator}{version}"


def canonical_requirements(requirements: Sequence[str] | dict[str, None]) -> tuple[str, ...]:
    """One spelling per requirement set: names canonical, entries of one distribution and
    marker merged (extras united, specifiers joined), specifiers canonical and sorted.

    So ``x>=0`` and ``X>=0.0``, or ``["x>=1", "x<2"]`` and ``["x<2,>=1"]``, make one
    environment key.
    """
    merged: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for text in requirements:
        requirement = Requirement(text)
        marker = str(requirement.marker) if requirement.marker else ""
        extras, specifiers = merged.setdefault(
            (canonicalize_name(requirement.name), marker), (set(), set())
        )
        extras.update(canonicalize_name(e) for e in requirement.extras)
        specifiers.update(canonical_specifier(s) for s in requirement.specifier)
    out = []
    for (name, marker), (extras, specifiers) in merged.items():
        text = name + (f"[{','.join(sorted(extras))}]" if extras else "")
        text += ",".join(sorted(specifiers))
        out.append(text + (f"; {marker}" if marker else ""))
    return tuple(sorted(out))


def environment_key(requirements: Sequence[str], base_image: str) -> str:
    """The cache key of an environment: the normalised requirement set + the base image."""
    payload = json.dumps(
        {"requirements": sorted(set(requirements)), "base": base_image, "python": SANDBOX_PYTHON},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def module_names(distribution: str) -> frozenset[str]:
    """Import names a distribution is likely to provide (``scikit-learn`` -> ``scikit_learn``)."""
    canonical = canonicalize_name(distribution)
    return frozenset({canonical.replace("-", "_"), canonical.replace("-", "")})


def _toml_position(message: str, content: str) -> tuple[int, int]:
    """tomllib's 1-based (line, column) in the block; "end of document": after the last."""
    found = re.search(r"at line (\d+), column (\d+)", message)
    if found:
        return int(found.group(1)), int(found.group(2))
    lines = content.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def _problem(block_line: int, line: int, col: int, message: str) -> Declared:
    return Declared(
        present=True,
        problems=(BlockProblem("dependencies-invalid", message, line, col),),
        line=block_line,
    )


#: A cheap test before parsing: a source without it has no block.
BLOCK_MARKER = "# /// script"
