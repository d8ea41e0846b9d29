"""``scorebox check agreement`` and the ``--min-agreement`` gate of ``scorebox run``.

Both read ``GET /v1/agreement`` on the server (the labels live there): the command prints
the report, the gate judges it by the intervals' lower bounds
(:mod:`engine.calibration.gate`): exit 3 below a minimum, 2 when there are too few labels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import click

from engine.cli.remote import Remote, with_remote

F = TypeVar("F", bound=Callable[..., Any])

EXIT_TOO_FEW_LABELS = 2
EXIT_BELOW = 3
#: ``--min-agreement required``: the agreement the server requires of each check version.
REQUIRED = "required"


def _fig(fig: Mapping[str, Any] | None) -> str:
    if not fig or fig.get("value") is None:
        return "n/a"
    lo, hi = fig["ci"]
    ci = "" if lo is None else f"  [{lo:.3f}, {hi:.3f}]"
    return f"{fig['value']:.3f}{ci}"


def _confusion_lines(confusion: Mapping[str, Any]) -> list[str]:
    """The confusion matrix: people's labels as rows, the check's as columns."""
    cols = confusion.get("check_labels", confusion["labels"])
    width = max(8, *(len(str(c)) + 2 for c in cols))
    lines = ["confusion (rows: people, columns: the check)"]
    lines.append(" " * 10 + "".join(f"{c:>{width}}" for c in cols))
    for label, row in zip(confusion["labels"], confusion["matrix"], strict=True):
        lines.append(f"{label:>10}" + "".join(f"{v:>{width}}" for v in row))
    return lines


def _figure_lines(report: Mapping[str, Any]) -> list[str]:
    """The agreement figures the report has, each with its interval, and the suggested
    threshold with how it does on the rows it was not chosen on."""
    names = [
        "tpr", "tnr", "accuracy", "f1", "mcc", "kappa", "auc", "spearman", "kendall_tau_b", "mae",
    ]  # fmt: skip
    lines = [f"  {name:<14}{_fig(report[name])}" for name in names if name in report]
    for kind, fig in (report.get("weighted_kappa") or {}).items():
        lines.append(f"  {kind + ' kappa':<14}{_fig(fig)}")
    chosen = report.get("suggested_threshold")
    if chosen and chosen.get("value") is not None:
        test = chosen.get("test", {})
        lines.append(
            f"  threshold     {chosen['value']:g} (chosen on {chosen['split']['dev']} rows; "
            f"on the {chosen['split']['test']} others: tpr {_fig(test.get('tpr'))}, "
            f"tnr {_fig(test.get('tnr'))})"
        )
    return lines


def _annotator_lines(annotators: Mapping[str, Any]) -> list[str]:
    """Agreement among the people: alpha, the check against each, and each pair's kappa."""
    lines = [f"  alpha         {_fig(annotators['alpha'])} ({len(annotators['names'])} people)"]
    for each in annotators.get("check_vs_each", []):
        figure = "kappa" if "kappa" in each else "spearman"
        lines.append(
            f"    the check against {each['annotator']} (n = {each['n']}): "
            f"{figure} {_fig(each[figure])}"
        )
    for pair in annotators["pairwise_kappa"]:
        lines.append(
            f"    kappa {pair['a']} / {pair['b']} (n = {pair['n']}): {_fig(pair['kappa'])}"
        )
    return lines


def _disagreement_lines(dis: Sequence[Mapping[str, Any]]) -> list[str]:
    """The first ten rows where the check and the people disagree, most confident first."""
    lines = [f"disagreements ({len(dis)}, most confident first):"]
    for d in dis[:10]:
        lines.append(
            f"  run {d['target']['run']} row {d['target']['row']}: people {d['human']!r}, "
            f"check {d['check']!r}  {d.get('link') or ''}"
        )
    return lines


def render_report(report: Mapping[str, Any]) -> str:
    """The report as text: counts, the confusion matrix, figures with intervals, verdict."""
    lines = [
        f"{report['check']} against labels {report['labels']!r} ({report['label_type']}): "
        f"n = {report['n']}, " + ", ".join(f"{k}: {v}" for k, v in report["per_class"].items()),
    ]
    confusion = report.get("confusion")
    if confusion:
        lines.extend(_confusion_lines(confusion))
    lines.extend(_figure_lines(report))
    annotators = report.get("annotators")
    if annotators:
        lines.extend(_annotator_lines(annotators))
    if report.get("holdout"):
        held = report["holdout"]
        lines.append(f"on the held-back rows only ({held['fraction']:g}, seed {held['seed']})")
    lines.append(f"verdict: {report['message']}")
    dis = report.get("disagreements") or []
    if dis:
        lines.extend(_disagreement_lines(dis))
    lines.append(f"seed {report['seed']} (pass --seed to reproduce)")
    return "\n".join(lines)


def fetch_report(
    remote: Remote,
    check: str,
    labels: str,
    run_id: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``GET /v1/agreement`` for one check and label name."""
    params: dict[str, Any] = {"check": check, "labels": labels, **options}
    if run_id is not None:
        params["run"] = run_id
    report: dict[str, Any] = remote.json("GET", "/v1/agreement", params=params)
    return report


@click.command("agreement")
@click.argument("name")
@click.option("--labels", "label_name", required=True, help="The label name, e.g. helpful.")
@click.option("--run", "run_id", default=None, help="Only this run's labelled rows.")
@click.option("--rule", default=None, help="Only the labelled spans this rule scored.")
@click.option("--seed", type=int, default=0, show_default=True, help="The bootstrap's seed.")
@click.option("--resamples", type=click.IntRange(100, 20_000), default=2000, show_default=True)
@click.option(
    "--min-per-class",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help='Below this many labels in a class the verdict is "too few labels".',
)
@click.option(
    "--require",
    default=None,
    metavar="FIGURE=MIN[,...]",
    help="Store this as the check version's required agreement with the labels (e.g. "
    "kappa=0.6 or tpr=0.8,tnr=0.8): runs naming it are then refused below it.",
)
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Report on the labelled rows `scorebox labels examples --holdout` held back only.",
)
@click.option("--holdout-seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@with_remote
def agreement(
    name: str,
    label_name: str,
    run_id: str | None,
    rule: str | None,
    seed: int,
    resamples: int,
    min_per_class: int,
    require: str | None,
    holdout: float | None,
    holdout_seed: int,
    as_json: bool,
    remote: Remote,
) -> None:
    """Can check NAME (or NAME@N) be trusted? Its results against human labels: on a
    run's rows (--run), on the spans a rule scored (--rule), or on every labelled row and
    span it scored."""
    if require is not None:
        stored = remote.json(
            "PUT",
            f"/v1/checks/{name}/required-agreement",
            json={"requirement": f"{label_name}:{require}"},
        )
        click.echo(f"{stored['check']} now requires {stored['requirement']}", err=True)
    extra: dict[str, Any] = {}
    if holdout is not None:
        extra = {"holdout": holdout, "holdout_seed": holdout_seed}
    if rule is not None:
        extra["rule"] = rule
    report = fetch_report(
        remote,
        name,
        label_name,
        run_id,
        seed=seed,
        resamples=resamples,
        min_per_class=min_per_class,
        **extra,
    )
    click.echo(json.dumps(report, indent=2) if as_json else render_report(report))


def min_agreement_option(func: F) -> F:
    """``--min-agreement LABELS:FIGURE=MIN[,...]`` (repeatable) for ``scorebox run``."""
    return click.option(
        "--min-agreement",
        "min_agreement",
        multiple=True,
        metavar="LABELS:FIGURE=MIN",
        help="Refuse the run's checks unless they agree with human labels: the lower bound "
        "of each figure's interval must reach MIN, e.g. helpful:kappa=0.6 or "
        "helpful:tpr=0.8,tnr=0.8; `required`: the agreement the server requires of each "
        "check version (scorebox check agreement --require). Exit 3 below it, 2 with too "
        "few labels. Needs a server.",
    )(func)


def _stored_requirements(remote: Remote, names: Sequence[str]) -> list[dict[str, Any]]:
    """The server's required agreements of ``names``, judged now."""
    response = remote.client.request(
        "GET", "/v1/required-agreements", params={"check": ",".join(names)}
    )
    if response.status_code >= 400:
        from engine.cli.remote import describe_problem  # noqa: PLC0415 (lazy)

        raise click.ClickException(describe_problem(response))
    found: list[dict[str, Any]] = response.json()
    return found


def check_agreement(
    server: str | None,
    api_key: str | None,
    refs: Iterable[str | Mapping[str, Any]],
    requirements: Sequence[str],
) -> None:
    """Before scoring: judge every check of ``refs`` (the run's references: names or JSON
    objects) against each ``--min-agreement``; ``--min-agreement required`` judges each
    against the agreement the server requires of it (``PUT
    /v1/checks/{ref}/required-agreement``). Exit 3 when one is below and 2 when one has too
    few labels, the verdicts on stderr; else return."""
    from engine.calibration.gate import BELOW, PASSED, judge, parse_requirement  # noqa: PLC0415 (lazy)
    from engine.errors import InvalidRequestError  # noqa: PLC0415 (lazy)

    check_names = [
        (ref if isinstance(ref, str) else str(ref["name"])).removeprefix("builtin:") for ref in refs
    ]
    stored = REQUIRED in requirements
    try:
        parsed = [parse_requirement(text) for text in requirements if text != REQUIRED]
    except InvalidRequestError as exc:
        raise click.BadParameter(str(exc), param_hint="--min-agreement") from exc
    if not server:
        if parsed or stored:
            raise click.UsageError(
                "--min-agreement needs a server, where the labels are: pass --server "
                "(or set SCOREBOX_SERVER) and name checks pushed there"
            )
        return
    remote = Remote(server, api_key)
    verdicts: list[tuple[str, str]] = [
        (r["status"], f"{r['message']} (required of {r['check']})")
        for r in (_stored_requirements(remote, check_names) if stored else [])
    ]
    for check in check_names:
        for requirement in parsed:
            result = judge(fetch_report(remote, check, requirement.labels), requirement)
            verdicts.append((result.status, result.message))
    worst = 0
    for status, message in verdicts:
        if status == PASSED:
            click.echo(f"agreement: {message}", err=True)
            continue
        worst = max(worst, EXIT_BELOW if status == BELOW else EXIT_TOO_FEW_LABELS)
        click.echo(f"FAILED agreement: {message}", err=True)
    if worst:
        raise SystemExit(worst)
