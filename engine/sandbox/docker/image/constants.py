"""Names, tags and limits of the sandbox image build."""

from __future__ import annotations

from collections.abc import Callable

Log = Callable[[str], None]


REPOSITORY = "scorebox-sandbox"


LATEST = f"{REPOSITORY}:latest"


BASE_REPOSITORY = "scorebox-base"


REGISTRY_BASE = "debian:bookworm-slim"


SUITE = "bookworm"


#: Debian bookworm's python3; the wheels are downloaded for it.
PYTHON_VERSION = "3.11"


DEFAULT_MIRROR = "http://deb.debian.org/debian"


HASH_LABEL = "scorebox.content-hash"


#: Bump when the bootstrap procedure changes, so existing bases are not reused.
BOOTSTRAP_RECIPE = "1"


#: Always in the image, besides the packages of SANDBOX_PACKAGES.
BASE_DEBIAN_PACKAGES: tuple[str, ...] = ("python3", "tini")


#: Dependencies replaced by empty packages: python3-scipy depends on pythran, a compiler
#: it needs only at build time, which would pull g++ and boost (~400 MB) into the sandbox.
STAND_INS: tuple[str, ...] = ("python3-pythran",)


#: Engine files copied into /opt/scorebox/engine (paths under ``engine/``): the check
#: contract the harness runs by, and ``engine.checks``, the import path check files use.
#: Everything else under ``engine/contract/`` is host-only (see its package docstring).
ENGINE_FILES: tuple[str, ...] = (
    "checks.py",
    "contract/__init__.py",
    "contract/checks.py",
    "contract/formats.py",
    "contract/params.py",
    "contract/restricted.py",
    "contract/returns.py",
    "contract/statuses.py",
)

#: Stand-in modules for other tools' scorer packages (``reward_kit``), copied from
#: ``sandbox_images/python/stand-in-modules/`` to /opt/scorebox/stand-in-modules, which the harness
#: appends LAST to ``sys.path``: a check's declared packages (put before it) win.
STAND_IN_MODULES_DIR = "stand-in-modules"


PULL_TIMEOUT_SECONDS = 180.0


BOOTSTRAP_TIMEOUT_SECONDS = 3600.0


BUILD_TIMEOUT_SECONDS = 3600.0


_IMPORT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
