"""The ``scorebox`` command. Commands parse, call the engine, render; no logic here."""

from __future__ import annotations

from typing import Any

import click

from engine.cli.agreement import agreement
from engine.cli.audit import audit
from engine.cli.check import check
from engine.cli.check_remote import list_checks, push, rm, show
from engine.cli.db import db
from engine.cli.demo import demo
from engine.cli.doctor import doctor
from engine.cli.env import env
from engine.cli.generate import generate
from engine.cli.image import image
from engine.cli.judge import judge
from engine.cli.labels import labels
from engine.cli.rule import rule
from engine.cli.run import run
from engine.cli.serve import serve
from engine.cli.suite import init
from engine.cli.tenant import tenant
from engine.cli.worker import worker
from engine.errors import ScoreboxError
from engine.logs import configure_logging, env_log_format
from engine.runs.export import EXIT_INTERRUPTED


class _SettingsProblem(click.ClickException):
    """A bad ``SCOREBOX_*`` value: a usage error (exit 2), shown as one line per variable."""

    exit_code = 2


class _Main(click.Group):
    """The root group: Ctrl-C anywhere is "interrupted" and exit 130, as documented.

    (click alone prints "Aborted!" and exits 1, which a CI job cannot tell from a failure.)
    Commands with more to say (following a remote run) catch it themselves first.
    Every :class:`~engine.errors.ScoreboxError` a command lets through, and every
    ``OSError`` (a file that cannot be read or written), is shown as one line
    ``Error: <message>`` with exit code 1; a bad ``SCOREBOX_*`` value
    (:class:`~engine.setting_values.SettingValueError`) with exit code 2.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except ScoreboxError as exc:  # the library's errors name the fix: show them as they are
            from engine.setting_values import SettingValueError  # noqa: PLC0415 (lazy)

            if isinstance(exc, SettingValueError):
                raise _SettingsProblem(str(exc)) from exc
            raise click.ClickException(str(exc)) from exc
        except click.ClickException as exc:
            from engine.setting_values import SettingValueError  # noqa: PLC0415 (lazy)

            if isinstance(exc.__cause__, SettingValueError):  # a command wrapped it: still 2
                raise _SettingsProblem(exc.message) from exc.__cause__
            raise
        except OSError as exc:  # a file that cannot be read or written: one line, not a traceback
            from engine.suites.outputs import describe_os_error  # noqa: PLC0415 (lazy)

            raise click.ClickException(describe_os_error(exc)) from exc


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scorebox")
def main() -> None:
    """scorebox: score LLM outputs with sandboxed checks."""
    # the nodes' log format for every command (serve and worker set their own level)
    configure_logging("WARNING", env_log_format())


main.add_command(check)
main.add_command(image)
main.add_command(serve)
main.add_command(tenant)
main.add_command(db)
main.add_command(demo)
main.add_command(run)
main.add_command(init)
main.add_command(doctor)
main.add_command(env)
main.add_command(judge)
main.add_command(worker)
main.add_command(audit)
main.add_command(labels)
main.add_command(rule)
check.add_command(push)
check.add_command(list_checks)
check.add_command(show)
check.add_command(rm)
check.add_command(generate)
check.add_command(agreement)
