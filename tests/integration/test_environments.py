"""Declared dependencies against the real package index, under runc and runsc.

Each test first removes the environment images it expects to build, so "built once"
is measured, not inherited from an earlier session on the same Docker engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.contract import Status
from engine.environments import read_block
from engine.sandbox.docker.backend import DockerBackend
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings

TEXTSTAT_BLOCK = '# /// script\n# dependencies = ["textstat==0.7.4"]\n# ///\n'
WORDS = TEXTSTAT_BLOCK + textwrap.dedent(
    """\
    import textstat

    def evaluate(model_output) -> float:
        return float(textstat.lexicon_count(model_output))
    """
)
SYLLABLES = TEXTSTAT_BLOCK + textwrap.dedent(
    """\
    import textstat

    def evaluate(model_output) -> float:
        return float(textstat.syllable_count(model_output))
    """
)
XXHASH = textwrap.dedent(
    """\
    # /// script
    # dependencies = ["xxhash==3.5.0"]
    # ///
    import xxhash

    def evaluate(model_output) -> bool:
        assert xxhash.__file__.startswith("/opt/scorebox-env/"), xxhash.__file__
        return xxhash.xxh64_hexdigest(model_output) == "44bc2cf5ad770999"
    """
)
ROWS = [{"model_output": "one two three"}, {"model_output": "a b"}]


def _key(settings: Settings, source: str) -> str:
    from engine.environments import environment_key

    return environment_key(read_block(source).requirements, settings.image)


@pytest.fixture
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    runner = SandboxRunner(docker_settings)
    yield runner
    runner.close()


def _backend(runner: SandboxRunner) -> DockerBackend:
    backend = runner.backend
    assert isinstance(backend, DockerBackend)
    return backend


def test_declared_package_scores_and_a_second_check_reuses_its_environment(
    docker_settings: Settings, runner: SandboxRunner
) -> None:
    backend = _backend(runner)
    key = _key(docker_settings, WORDS)
    backend.environments.installer.remove_environment(key)
    results = runner.run_check(WORDS, ROWS)
    assert [(r.status, r.score) for r in results] == [(Status.OK, 3.0), (Status.OK, 2.0)]
    assert backend.environments.built == [key]
    # Another check (another source, another tenant's worker key) with the same block.
    again = runner.run_check(SYLLABLES, ROWS)
    assert [r.status for r in again] == [Status.OK, Status.OK]
    assert backend.environments.built == [key]  # no second build
    record = backend.environments.installer.find_environment(key)
    assert record is not None
    assert record.resolved["textstat"] == "0.7.4"
    assert record.size_bytes > 0
    assert record.requirements == ("textstat==0.7.4",)


def test_a_package_with_a_binary_wheel(docker_settings: Settings, runner: SandboxRunner) -> None:
    results = runner.run_check(XXHASH, [{"model_output": "abc"}, {"model_output": "abd"}])
    assert [(r.status, r.score) for r in results] == [(Status.OK, 1.0), (Status.OK, 0.0)], [
        r.error for r in results
    ]


def test_a_declared_version_wins_over_the_images_copy(
    docker_settings: Settings, runner: SandboxRunner
) -> None:
    source = textwrap.dedent(
        """\
        # /// script
        # dependencies = ["rapidfuzz==3.9.0"]
        # ///
        import rapidfuzz

        def evaluate(model_output) -> bool:
            assert rapidfuzz.__file__.startswith("/opt/scorebox-env/"), rapidfuzz.__file__
            return rapidfuzz.__version__ == "3.9.0"
        """
    )
    results = runner.run_check(source, [{"model_output": "x"}])
    assert [(r.status, r.score) for r in results] == [(Status.OK, 1.0)], results[0].error
    plain = runner.run_check(
        "import rapidfuzz\ndef evaluate(model_output) -> bool:\n"
        "    return rapidfuzz.__version__ == '3.9.0'\n",
        [{"model_output": "x"}],
    )
    assert [(r.status, r.score) for r in plain] == [(Status.OK, 0.0)]  # the image's own


def test_an_sdist_only_package_is_refused_then_scores_after_env_wheel(
    docker_settings: Settings, tmp_path: Path
) -> None:
    wheelhouse = tmp_path / "wheelhouse"
    settings = docker_settings.model_copy(update={"packages_wheelhouse": wheelhouse})
    source = '# /// script\n# dependencies = ["langdetect==1.0.9"]\n# ///\n' + (
        "import langdetect\ndef evaluate(model_output) -> bool:\n"
        "    langdetect.DetectorFactory.seed = 0\n"
        "    return langdetect.detect(model_output) == 'en'\n"
    )
    rows = [{"model_output": "This is an English sentence about the weather today."}]
    runner = SandboxRunner(settings)
    try:
        _backend(runner).environments.installer.remove_environment(_key(settings, source))
        refused = runner.run_check(source, rows)
        assert {r.status for r in refused} == {Status.SANDBOX_ERROR}
        error = refused[0].error or ""
        assert "no wheel of `langdetect==1.0.9`" in error
        assert "SCOREBOX_PACKAGES_WHEELHOUSE" in error and "scorebox env wheel" in error
        assert "failed to build" in error and "build log:" in error

        from click.testing import CliRunner

        from engine.cli import main

        variables = {
            "SCOREBOX_IMAGE": settings.image,
            "SCOREBOX_DATA_DIR": str(settings.data_dir),
            "SCOREBOX_PACKAGES_WHEELHOUSE": str(wheelhouse),
            "SCOREBOX_RUNTIME": settings.runtime or "",
        }
        built = CliRunner().invoke(main, ["env", "wheel", "langdetect==1.0.9"], env=variables)
        assert built.exit_code == 0, built.output
        assert [p.name for p in wheelhouse.iterdir()] == ["langdetect-1.0.9-py3-none-any.whl"]

        scored = runner.run_check(source, rows)
        assert [(r.status, r.score) for r in scored] == [(Status.OK, 1.0)], scored[0].error
    finally:
        runner.close()


def test_a_denied_package_is_refused_when_scoring(docker_settings: Settings) -> None:
    settings = docker_settings.model_copy(update={"packages_deny": ["textstat"]})
    runner = SandboxRunner(settings)
    try:
        results = runner.run_check(WORDS, ROWS)
    finally:
        runner.close()
    assert {r.status for r in results} == {Status.SANDBOX_ERROR}
    assert "the operator denies `textstat`" in (results[0].error or "")


def test_a_build_past_its_size_limit(docker_settings: Settings, tmp_path: Path) -> None:
    settings = docker_settings.model_copy(update={"env_max_mb": 1, "data_dir": tmp_path})
    source = '# /// script\n# dependencies = ["pyphen==0.16.0"]\n# ///\n' + (
        "import pyphen\ndef evaluate(model_output) -> bool:\n    return True\n"
    )
    runner = SandboxRunner(settings)
    try:
        _backend(runner).environments.installer.remove_environment(_key(settings, source))
        results = runner.run_check(source, ROWS)
    finally:
        runner.close()
    assert {r.status for r in results} == {Status.SANDBOX_ERROR}
    assert "past SCOREBOX_ENV_MAX_MB=1" in (results[0].error or "")


RACER = """
import json, sys
from pathlib import Path
from engine.environments.spec import read_block
from engine.sandbox.docker.environments import docker_environments
from engine.settings import Settings

settings = Settings.model_validate_json(sys.argv[1])
environments = docker_environments(settings)
record = environments.ensure(read_block(sys.argv[2]).requirements)
print(json.dumps({"built": environments.built, "key": record.key}))
"""


def test_two_servers_racing_on_a_new_environment_build_it_once(
    docker_settings: Settings,
) -> None:
    source = '# /// script\n# dependencies = ["python-slugify==8.0.4"]\n# ///\n'
    key = _key(docker_settings, source)
    from engine.sandbox.docker.environments import docker_environments

    docker_environments(docker_settings).installer.remove_environment(key)
    config = docker_settings.model_dump_json()
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, config, source],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=600) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), [err for _, err in outputs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert {r["key"] for r in reports} == {key}
    assert sorted(len(r["built"]) for r in reports) == [0, 1]  # one built, one waited


def test_local_run_env_commands_and_offline_mode(
    docker_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scorebox run` scores a file with a block; `scorebox env build|show|list|prune`;
    with SCOREBOX_PACKAGES_OFFLINE only a prebuilt environment can be used."""
    from click.testing import CliRunner

    from engine.cli import main
    from engine.sandbox.docker.environments import docker_environments

    source = '# /// script\n# dependencies = ["python-slugify==8.0.3"]\n# ///\n' + (
        "import slugify\ndef evaluate(model_output) -> bool:\n"
        "    return slugify.slugify(model_output) == 'hello-world'\n"
    )
    check = tmp_path / "slug.py"
    check.write_text(source)
    data = tmp_path / "rows.jsonl"
    data.write_text('{"model_output": "Hello, World!"}\n{"model_output": "nope"}\n')
    key = _key(docker_settings, source)
    docker_environments(docker_settings).installer.remove_environment(key)
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SCOREBOX_IMAGE", docker_settings.image)
    monkeypatch.setenv("SCOREBOX_CONTAINER_LABELS", json.dumps(docker_settings.container_labels))
    if docker_settings.runtime:
        monkeypatch.setenv("SCOREBOX_RUNTIME", docker_settings.runtime)
    monkeypatch.delenv("SCOREBOX_SERVER", raising=False)
    monkeypatch.setenv("SCOREBOX_PACKAGES_OFFLINE", "1")
    cli = CliRunner()
    run = ["run", "--no-progress", "--check", str(check), "--data", str(data)]

    offline = cli.invoke(main, [*run, "-o", str(tmp_path / "offline.jsonl")])
    rows = [json.loads(line) for line in (tmp_path / "offline.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} == {"sandbox_error"}, offline.output
    assert "SCOREBOX_PACKAGES_OFFLINE" in rows[0]["error"]
    assert "scorebox env build" in rows[0]["error"]

    shown = cli.invoke(main, ["env", "show", str(check), "--json"])
    assert json.loads(shown.output)["state"] == "missing", shown.output

    built = cli.invoke(main, ["env", "build", str(check)])
    assert built.exit_code == 0 and f"{key} built" in built.output, built.output
    again = cli.invoke(main, ["env", "build", str(check)])
    assert f"{key} already built" in again.output, again.output

    shown = json.loads(cli.invoke(main, ["env", "show", str(check), "--json"]).output)
    assert shown["state"] == "ready"
    assert shown["record"]["resolved"]["python_slugify"] == "8.0.3"
    listed = json.loads(cli.invoke(main, ["env", "list", "--json"]).output)
    assert key in [r["key"] for r in listed]

    scored = cli.invoke(main, [*run, "-o", str(tmp_path / "scored.jsonl")])
    rows = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [(r["status"], r["score"]) for r in rows] == [("ok", True), ("ok", False)], scored.output

    kept = cli.invoke(main, ["env", "prune"])  # other images, long unused, past the total
    assert kept.exit_code == 0 and key not in kept.output
    assert docker_environments(docker_settings).installer.find_environment(key) is not None
    would = cli.invoke(main, ["env", "prune", "--all", "--dry-run"])
    assert would.exit_code == 0 and "would remove" in would.output and key in would.output
    assert docker_environments(docker_settings).installer.find_environment(key) is not None

    # `env list` has a header and names the checks that declare each environment
    from engine import catalog
    from engine.catalog.spec import CheckSpec
    from engine.storage import open_store
    from engine.tenancy import auth
    from engine.tenancy.quotas import default_quotas

    settings = Settings()
    store = open_store(settings.effective_database_url)
    try:
        new = auth.create_tenant(store, "acme")
        principal = auth.authenticate(store, f"Bearer {new.secret}")
        spec = CheckSpec(name="slug", source=source)
        catalog.save_check(store, principal, spec, default_quotas(settings))
    finally:
        store.engine.dispose()
    listed_text = cli.invoke(main, ["env", "list"]).output
    assert listed_text.splitlines()[0].split()[:2] == ["KEY", "SIZE"], listed_text
    assert "CHECKS" in listed_text.splitlines()[0]
    assert "used by acme/slug@1" in listed_text, listed_text


def test_the_real_okareo_wins_over_the_stand_in_once_its_wheels_are_approved(
    docker_settings: Settings, tmp_path: Path
) -> None:
    """okareo 0.0.114 needs two sdist-only packages (nkeys, docstring-parser): each build
    names the next one, the operator approves it with `scorebox env wheel`, then the
    check imports the real okareo from its environment, not the image's stand-in."""
    from click.testing import CliRunner

    from engine.cli import main

    wheelhouse = tmp_path / "wheelhouse"
    settings = docker_settings.model_copy(update={"packages_wheelhouse": wheelhouse})
    source = textwrap.dedent(
        """\
        # /// script
        # dependencies = ["okareo==0.0.114"]
        # ///
        import okareo
        from okareo.checks import CodeBasedCheck

        def evaluate(model_output) -> bool:
            return okareo.__file__.startswith("/opt/scorebox-env/")
        """
    )
    variables = {
        "SCOREBOX_IMAGE": settings.image,
        "SCOREBOX_DATA_DIR": str(settings.data_dir),
        "SCOREBOX_PACKAGES_WHEELHOUSE": str(wheelhouse),
        "SCOREBOX_RUNTIME": settings.runtime or "",
    }
    runner = SandboxRunner(settings)
    approved = []
    try:
        _backend(runner).environments.installer.remove_environment(_key(settings, source))
        for _ in range(4):
            [result] = runner.run_check(source, [{"model_output": "x"}])
            if result.status != Status.SANDBOX_ERROR:
                break
            error = result.error or ""
            marker = "scorebox env wheel '"
            assert marker in error, error
            requirement = error.split(marker, 1)[1].split("'", 1)[0]
            built = CliRunner().invoke(main, ["env", "wheel", requirement], env=variables)
            assert built.exit_code == 0, built.output
            approved.append(requirement.split("<")[0].split(">")[0])
    finally:
        runner.close()
    assert approved == ["nkeys", "docstring-parser"]
    assert (result.status, result.score) == (Status.OK, 1.0), result.error


def test_a_pin_to_a_version_that_does_not_exist_names_the_nearest(tmp_path: Path) -> None:
    """pip's real "No matching distribution found (from versions: ...)" for a wrong pin is
    said as a wrong pin with the nearest versions, not as a package with no wheel."""
    from engine.environments import Environments
    from engine.errors import EnvironmentBuildError

    class NeverInstalled:
        def find_environment(self, key: str) -> None:
            return None

    environments = Environments(Settings(data_dir=tmp_path), NeverInstalled())  # type: ignore[arg-type]
    with pytest.raises(EnvironmentBuildError) as caught:
        environments.ensure(["textstat==99.0"])
    message = str(caught.value)
    assert "no version of `textstat` matching `textstat==99.0`" in message, message
    assert "No matching distribution found" in message and "nearest: 0.7." in message
    assert "scorebox env wheel" not in message
