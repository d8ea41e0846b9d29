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
    at = _Locator(line, content)
    problems = _unknown_keys(data, at)
    requires_python = _requires_python(data.get("requires-python"), at, problems)
    normalised, names = _dependencies(data.get("dependencies", []), at, rules, problems)
    return Declared(
        present=True,
        requirements=canonical_requirements(normalised),
        requires_python=requires_python,
        problems=tuple(problems),
        line=line,
        names=frozenset(names),
    )


class _Locator:
    """Where a text of the block stands in the check's source (1-based line and column)."""

    def __init__(self, block_line: int, content: str) -> None:
        self.block_line = block_line
        self.lines = content.splitlines()

    def __call__(self, needle: str) -> tuple[int, int]:
        for index, text in enumerate(self.lines):
            col = text.find(needle)
            if col >= 0:
                return self.block_line + 1 + index, col + 3  # past the `# ` of the comment
        return self.block_line, 1


def _invalid(message: str, at: tuple[int, int]) -> BlockProblem:
    return BlockProblem("dependencies-invalid", message, *at)


def _unknown_keys(data: dict[str, object], at: _Locator) -> list[BlockProblem]:
    return [
        _invalid(
            f"`{key}` is not a PEP 723 key: use `dependencies`, `requires-python` or `tool`",
            at(key),
        )
        for key in data
        if key not in BLOCK_KEYS
    ]


def _requires_python(value: object, at: _Locator, problems: list[BlockProblem]) -> str | None:
    """``requires-python`` when it is a string (a problem when it excludes the sandbox's
    Python or is no specifier), else None."""
    if value is None:
        return None
    where = at("requires-python")
    if not isinstance(value, str):
        problems.append(_invalid("`requires-python` must be a string", where))
        return None
    try:
        admits = SpecifierSet(value).contains(SANDBOX_PYTHON)
    except InvalidSpecifier as exc:
        problems.append(_invalid(f"`requires-python`: {exc}", where))
        return value
    if not admits:
        problems.append(
            _invalid(
                f"`requires-python = {value!r}` excludes the sandbox's Python "
                f"{SANDBOX_PYTHON}: widen it (e.g. `>=3.11`) or drop it",
                where,
            )
        )
    return value


def _dependencies(
    raw: object, at: _Locator, rules: PackageRules | None, problems: list[BlockProblem]
) -> tuple[dict[str, None], set[str]]:
    """The normalised requirements (in order, once each) and their canonical names."""
    normalised: dict[str, None] = {}
    names: set[str] = set()
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        problems.append(
            _invalid(
                '`dependencies` must be a list of strings, e.g. `dependencies = ["textstat"]`',
                at("dependencies"),
            )
        )
        return normalised, names
    for entry in raw:
        requirement, problem = _requirement(entry, at(entry), rules or PackageRules())
        if problem is not None:
            problems.append(problem)
        elif requirement is not None:
            names.add(requirement.name)
            normalised[str(requirement)] = None
    return normalised, names


def _requirement(
    entry: str, where: tuple[int, int], rules: PackageRules
) -> tuple[Requirement | None, BlockProblem | None]:
    """One ``dependencies`` entry, its name canonical, or the problem with it."""
    try:
        requirement = Requirement(entry)
    except InvalidRequirement as exc:
        message = (
            f"{entry!r} is not a valid requirement: {exc}: write `name`, `name==1.2` or `name>=1.2`"
        )
        return None, _invalid(message, where)
    if requirement.url:
        message = (
            f"{entry!r} is a direct URL reference: only packages from the index or the "
            "operator's wheelhouse can be declared; name the package and a version"
        )
        return None, _invalid(message, where)
    refusal = rules.refusal(requirement.name)
    if refusal is not None:
        return None, BlockProblem("package-not-allowed", refusal, *where)
    requirement.name = canonicalize_name(requirement.name)
    return requirement, None


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
