"""Declared dependencies: a check's PEP 723 block, built into a cached environment.

``spec`` parses, validates, normalises and keys the block (pure); ``build`` downloads
wheels on the host, has the sandbox backend install them offline into a derived image,
records, waits for and prunes builds; ``records`` holds what crosses to that backend (the
``Installer`` seam and its records), ``locks`` one builder per key on a host. See
docs/writing-checks/packages.md.
"""

from __future__ import annotations

from engine.environments.build import Environments
from engine.environments.records import (
    ENV_PATH,
    ENV_REPOSITORY,
    BuildState,
    EnvironmentRecord,
    Installer,
)
from engine.environments.spec import (
    BLOCK_MARKER,
    BlockProblem,
    Declared,
    PackageRules,
    environment_key,
    read_block,
)

__all__ = [
    "BLOCK_MARKER",
    "ENV_PATH",
    "ENV_REPOSITORY",
    "BlockProblem",
    "BuildState",
    "Declared",
    "EnvironmentRecord",
    "Environments",
    "Installer",
    "PackageRules",
    "environment_key",
    "read_block",
]
