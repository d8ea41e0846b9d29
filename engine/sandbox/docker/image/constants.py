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


#: What of ``engine/`` the image carries, copied whole to /opt/scorebox/engine: the
#: packages (every ``.py`` file under them, at any depth) and single modules, paths under
#: ``engine/``. The harness, the check contract it runs by, and ``engine.checks``, the import
#: path check files use. Whatever is put in these folders is carried; a module the host
#: alone needs lives elsewhere. The ``stdlib_only`` import contract (pyproject.toml) names
#: the same folders, so everything carried imports the standard library alone.
CARRIED_PACKAGES: tuple[str, ...] = ("contract", "harness")
CARRIED_MODULES: tuple[str, ...] = ("checks.py",)

#: /opt/scorebox/harness.py, the entry the host starts (``python3 -I
#: /opt/scorebox/harness.py [IDLE_EXIT_SECONDS]``, which every image answers to): puts the
#: image's folders on the import path (``-I`` adds none) and runs ``engine.harness`` as
#: ``python -m`` does. Stand-ins for other tools' packages come LAST: a check's declared
#: environment, put before them, replaces them with the real package.
LAUNCHER = """\
import runpy
import sys

sys.path[:0] = ["/opt/scorebox", "/opt/scorebox/site-packages"]
sys.path.append("/opt/scorebox/stand-in-modules")
runpy.run_module("engine.harness", run_name="__main__", alter_sys=True)
"""

#: Stand-in modules for other tools' scorer packages (``reward_kit``), copied from
#: ``sandbox_images/python/stand-in-modules/`` to /opt/scorebox/stand-in-modules, which the
#: :data:`LAUNCHER` appends LAST to ``sys.path``: a check's declared packages (put before it) win.
STAND_IN_MODULES_DIR = "stand-in-modules"


PULL_TIMEOUT_SECONDS = 180.0


BOOTSTRAP_TIMEOUT_SECONDS = 3600.0


BUILD_TIMEOUT_SECONDS = 3600.0


_IMPORT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
