"""Names the suite files, the CLI, the catalog and the exports share, defined once.

This module imports nothing (not even pydantic), so ``scorebox --help`` stays fast when a
command module reads a name from here.
"""

from __future__ import annotations

#: The suite file ``scorebox run`` reads when no ``--check`` is given.
SUITE_FILE = "scorebox.yaml"

#: ``builtin:NAME`` names the built-in NAME even when a check of the tenant shadows it.
BUILTIN_PREFIX = "builtin:"

#: The row statuses that fail a run (exit 3) unless a suite's ``fail_on`` or ``--fail-on``
#: says otherwise: values of :class:`engine.contract.Status`. ``invalid_score`` is one: a
#: check that returns the wrong type (``"PASS"``) never scores and must not pass CI.
DEFAULT_FAIL_ON: tuple[str, ...] = ("error", "invalid_score", "judge_error", "sandbox_error")


def split_entry(name: str) -> tuple[str, str | None]:
    """A check file named with its entry function, as promptfoo spells it.

    ``graders.py:injection_blocked`` (or ``file://graders.py:injection_blocked``) ->
    ``("graders.py", "injection_blocked")``; a name without ``:function`` -> ``(name, None)``.
    """
    bare = name.removeprefix("file://")
    path, sep, entry = bare.rpartition(":")
    if sep and path.endswith(".py") and entry.isidentifier():
        return path, entry
    return (bare if bare.endswith(".py") else name), None
