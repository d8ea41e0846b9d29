#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to a working scorebox:
#
#   scripts/dev.sh setup               venv + Docker engine + gVisor (runsc) + sandbox image
#   scripts/dev.sh demo                setup, then the demo
#   scripts/dev.sh lint                ruff, ruff format --check, mypy --strict, bandit, lint-imports, mkdocs build --strict (what CI gates on)
#   scripts/dev.sh test [pytest args]  setup, lint, then pytest (Docker, PostgreSQL, Redis tests included)
#   scripts/dev.sh test-fast [args]    pytest tests/unit only: no Docker, no database server (the fast loop)
#   scripts/dev.sh lock                regenerate requirements/dev.lock and runtime.lock (hashes) from pyproject.toml
#   scripts/dev.sh audit               pip-audit --strict against the lock (needs the vulnerability services)
#   scripts/dev.sh docs [mkdocs args]  serve the docs site at http://127.0.0.1:8001, rebuilt on save
#
# Idempotent and non-interactive; every step is skipped when already done.
# As root it installs what is missing with apt-get (docker.io, debootstrap,
# tini, python3-venv) and starts dockerd; otherwise it prints what to run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
LOCK="$ROOT/requirements/dev.lock"
STATE="$ROOT/.scorebox"
STAMP="$VENV/.scorebox-installed"
export DEBIAN_FRONTEND=noninteractive
if [[ -n "${SCOREBOX_DOCKER_HOST:-}" ]]; then
    export DOCKER_HOST="$SCOREBOX_DOCKER_HOST"
fi

say() { printf 'dev.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
is_root() { [[ "$(id -u)" -eq 0 ]]; }

APT_UPDATED=0
apt_install() {
    is_root || die "missing packages: run \`sudo apt-get install -y $*\`, then run this again"
    if [[ "$APT_UPDATED" -eq 0 ]]; then
        say "apt-get update"
        apt-get update -qq
        APT_UPDATED=1
    fi
    say "apt-get install $*"
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_venv() {
    local want
    want="$(cat pyproject.toml "$LOCK" <(python3 --version 2>&1) | sha256sum | cut -d' ' -f1)"
    if [[ -x "$VENV/bin/scorebox" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
        return
    fi
    command -v python3 >/dev/null || apt_install python3 python3-venv
    if [[ ! -x "$VENV/bin/python" ]]; then
        python3 -m venv "$VENV" 2>/dev/null || {
            rm -rf "$VENV"
            apt_install python3-venv
            python3 -m venv "$VENV"
        }
    fi
    # Exact versions with their hashes (requirements/dev.lock, made by `scripts/dev.sh lock`),
    # then scorebox itself with no dependency of its own resolved: a new release on the index
    # changes nothing here until the lock is regenerated.
    say "installing the locked dependencies into .venv (pip install --require-hashes -r requirements/dev.lock)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$LOCK"
    say "installing scorebox into .venv (pip install --no-deps -e .)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
    printf '%s\n' "$want" >"$STAMP"
}

docker_ok() { docker info >/dev/null 2>&1; }

ensure_docker() {
    if command -v docker >/dev/null && docker_ok; then
        return
    fi
    if [[ -n "${DOCKER_HOST:-}" ]]; then
        die "Docker engine at $DOCKER_HOST is not reachable: start it, or unset SCOREBOX_DOCKER_HOST"
    fi
    if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
        is_root || die "Docker is not installed. Run:
    sudo apt-get update && sudo apt-get install -y docker.io debootstrap tini
    sudo dockerd >/tmp/dockerd.log 2>&1 &     # or: sudo systemctl start docker
    sudo usermod -aG docker \"\$USER\"          # then log in again
and run this again."
        apt_install docker.io debootstrap tini
        docker_ok && return  # the package's service may have started it
    fi
    is_root || die "the Docker engine is not running (or you may not use it). Run:
    sudo systemctl start docker               # or: sudo dockerd >/tmp/dockerd.log 2>&1 &
    sudo usermod -aG docker \"\$USER\"          # then log in again"
    mkdir -p "$STATE"
    say "starting dockerd (log: .scorebox/dockerd.log)"
    setsid nohup dockerd >"$STATE/dockerd.log" 2>&1 </dev/null &
    local waited=0
    until docker_ok; do
        if [[ "$waited" -ge 60 ]]; then
            tail -n 20 "$STATE/dockerd.log" >&2 || true
            die "dockerd did not answer within 60 s (log above, full log in .scorebox/dockerd.log)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "dockerd is up after ${waited} s"
}

ensure_image() {
    # debootstrap is only needed when no image exists yet and no registry base is present.
    if ! command -v debootstrap >/dev/null && ! [[ -x /usr/sbin/debootstrap ]] \
        && ! docker image inspect "${SCOREBOX_IMAGE:-scorebox-sandbox:latest}" >/dev/null 2>&1; then
        if is_root; then
            apt_install debootstrap
        else
            say "debootstrap is not installed; the build needs it (and root) unless debian:bookworm-slim can be pulled"
        fi
    fi
    local built build_log
    # The build's lines go to stderr as they come, through the descriptor this script
    # already has (`tee /dev/stderr` would reopen a redirected log, `demo > log 2>&1`,
    # with O_TRUNC and fill it with NUL bytes), and to a file for the tag on the last line.
    build_log="$(mktemp)"
    "$VENV/bin/scorebox" image build | tee "$build_log" >&2
    built="$(tail -n 1 "$build_log")"
    rm -f "$build_log"
    # This checkout's own content-hashed tag: `latest` is shared by every checkout on the
    # engine, and another one's build may retag it while this one's tests run.
    BUILT_IMAGE="${built%% *}"
}

# `test` runs pytest in parallel workers (pytest-xdist, one test file at a time each): the
# suite waits on containers, servers and timeouts more than it computes, so more workers
# than cores pays. SCOREBOX_TEST_WORKERS=1 runs it in one process.
TEST_WORKERS="${SCOREBOX_TEST_WORKERS:-3}"
[[ "$TEST_WORKERS" =~ ^[1-9][0-9]*$ ]] || die "SCOREBOX_TEST_WORKERS must be a whole number of at least 1, not '$TEST_WORKERS'"
STARTED_SERVERS=()

start_servers() {  # start_servers postgres|redis VARIABLE
    # Throwaway servers, one per pytest worker (stopped on exit): tests restart PostgreSQL
    # and Redis and flush Redis, which must not reach another worker's tests. The first URL
    # is in VARIABLE, all of them in VARIABLES (tests/conftest.py gives worker N the N-th).
    # A URL the caller gives in VARIABLE is used as the first; VARIABLES given is used as is.
    local kind="$1" variable="$2" urls=() url
    local list="${variable}S"
    [[ -n "${!list:-}" ]] && return 0
    [[ -n "${!variable:-}" ]] && urls+=("${!variable}")
    while [[ "${#urls[@]}" -lt "$TEST_WORKERS" ]]; do
        url="$("$ROOT/scripts/$kind.sh" start)" \
            || die "could not start $kind: see the output of scripts/$kind.sh above"
        urls+=("$url")
        STARTED_SERVERS+=("$kind $url")
        trap cleanup EXIT
    done
    export "$variable=${urls[0]}" "$list=${urls[*]}"
}

# `test` runs lint and makes the test-only venvs (downloads from PyPI and npm) in the
# background while setup installs and builds the image, and waits for all of them before
# pytest. Any that fails fails `test`.
BG_PIDS=()
BG_NAMES=()
BG_LOGS=()

start_in_background() {  # start_in_background NAME COMMAND...
    local name="$1"
    shift
    mkdir -p "$STATE"
    local log="$STATE/$name.log"
    "$@" >"$log" 2>&1 &
    BG_PIDS+=("$!")
    BG_NAMES+=("$name")
    BG_LOGS+=("$log")
    trap cleanup EXIT
}

wait_for_background() {
    local i failed=()
    for i in "${!BG_PIDS[@]}"; do
        if ! wait "${BG_PIDS[$i]}"; then
            tail -n 40 "${BG_LOGS[$i]}" >&2 || true
            failed+=("${BG_NAMES[$i]} (output above; all of it in ${BG_LOGS[$i]#"$ROOT/"})")
        fi
    done
    BG_PIDS=()
    BG_NAMES=()
    BG_LOGS=()
    [[ "${#failed[@]}" -eq 0 ]] || die "failed: ${failed[*]}"
}

start_test_venvs() {
    # The okareo SDK (.okareo-venv, tests/okareo); the OpenAI client, the OpenTelemetry SDK
    # and exporter and three instrumentations (.scorebox/otel-venv, tests/online); other
    # tools' scorer runners (.formats-venvs, tests/integration/test_formats_corpus.py, which
    # says itself what to install when npm is missing). Each script is idempotent, and the
    # tests call it again: they find the venv made.
    start_in_background okareo-venv "$ROOT/scripts/okareo_venv.sh"
    start_in_background otel-venv "$ROOT/scripts/otel_venv.sh"
    if command -v npm >/dev/null; then
        start_in_background formats-venvs "$ROOT/scripts/formats_venvs.sh"
    fi
}

cleanup() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    local server
    for server in "${STARTED_SERVERS[@]}"; do
        "$ROOT/scripts/${server%% *}.sh" stop "${server#* }" || true
    done
}

ensure_gvisor() {
    # gVisor's runsc, registered with Docker, so the sandbox suites run under both runtimes.
    if [[ -n "${DOCKER_HOST:-}" ]]; then
        # A remote engine: it is that host's operator who installs runsc.
        "$ROOT/scripts/gvisor.sh" check || [[ "${CI:-}" != "true" ]] \
            || die "CI needs runsc on the Docker engine at $DOCKER_HOST"
        return 0
    fi
    if is_root || [[ "${CI:-}" == "true" ]]; then
        "$ROOT/scripts/gvisor.sh"
    else
        "$ROOT/scripts/gvisor.sh" check \
            || say "runsc is not set up: run \`sudo scripts/gvisor.sh\` to test under gVisor too"
    fi
}

ensure_chromium() {
    # Debian's chromium for the dashboard's browser tests (Playwright drives it; it comes from
    # the dev extra, and `playwright install` is never run: it downloads a browser).
    [[ -x /usr/bin/chromium ]] && return 0
    if is_root; then
        apt_install chromium
    elif [[ "${CI:-}" == "true" ]]; then
        die "CI needs chromium for tests/browser: run \`sudo apt-get install -y chromium\`"
    else
        say "chromium is not installed: run \`sudo apt-get install -y chromium\` for tests/browser"
    fi
}

setup() {
    ensure_venv
    ensure_docker
    ensure_gvisor
    ensure_image
    ensure_chromium
}

run_demo() {
    # The demo's data stays in .scorebox/demo, so its last line (the dashboard URL) can be opened.
    local serve=()
    [[ -t 0 && "${CI:-}" != "true" ]] && serve=(--serve)
    "$VENV/bin/scorebox" demo --data-dir "$STATE/demo" "${serve[@]}"
}

say_path() {
    # The virtualenv is not on PATH after setup: say how to call `scorebox` as the docs do.
    say "scorebox is in $VENV/bin: run \`source $VENV/bin/activate\` (or call $VENV/bin/scorebox) to use the bare \`scorebox\` of the docs"
}

run_lint() {
    # Any lint, format or type error fails `scripts/dev.sh test`, hence CI (.ci/run).
    # mypy's file list (engine, generator, the harness, tests) is [tool.mypy] files in pyproject.
    say "lint: ruff check, ruff format --check, mypy --strict, bandit, lint-imports, mkdocs build --strict"
    "$VENV/bin/ruff" check --quiet . || die "ruff check failed (\`.venv/bin/ruff check --fix .\` fixes some)"
    "$VENV/bin/ruff" format --check --quiet . || die "ruff format failed: run \`.venv/bin/ruff format .\`"
    "$VENV/bin/mypy" || die "mypy failed (errors above)"
    # Accepted findings carry `# nosec BXXX` with the reason on the line above.
    "$VENV/bin/bandit" -c pyproject.toml -q -r engine generator 2>/dev/null \
        || die "bandit found a security issue (above): fix it, or accept it inline with \`# nosec BXXX\` and the reason"
    # The layering of engine/ ([tool.importlinter] in pyproject.toml, docs/architecture.md "Rooms").
    local layering
    layering="$("$VENV/bin/lint-imports" --no-cache 2>&1)" || {
        printf '%s\n' "$layering" >&2
        die "lint-imports: an import breaks a layering contract (above): move the shared code into a room, or import the room, not the edge"
    }
    # The docs site (mkdocs.yml): a broken link or anchor, or a page left out of the
    # navigation, is a warning, and --strict makes it an error (not with --quiet, which
    # hides warnings from --strict too: the output is kept and shown on failure). No network.
    local site docs_log
    site="$(mktemp -d)"
    docs_log="$(NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict -d "$site" 2>&1)" || {
        printf '%s\n' "$docs_log" >&2
        rm -rf "$site"
        die "mkdocs build --strict failed (above): fix the page, link or nav entry it names"
    }
    rm -rf "$site"
}

run_docs() {
    # The docs site, rebuilt on every save; port 8001 leaves 8000 to `scorebox serve`.
    NO_MKDOCS_2_WARNING=1 exec "$VENV/bin/mkdocs" serve -a 127.0.0.1:8001 "$@"
}

run_tests() {
    export SCOREBOX_TEST_DOCKER=1
    if [[ -z "${SCOREBOX_IMAGE:-}" && -n "${BUILT_IMAGE:-}" ]]; then
        export SCOREBOX_IMAGE="$BUILT_IMAGE"
        say "tests use the sandbox image built from this checkout: $SCOREBOX_IMAGE"
    fi
    local rc=0 engine_restart=tests/faults/test_docker_restart.py parallel=()
    # Each worker is a pytest session of its own: its own temporary directories, servers
    # (start_servers) and containers, which carry its process as owner, so no other
    # session's clean-up, the orphan test or the start-up reaper removes them while it lives.
    [[ "$TEST_WORKERS" -gt 1 ]] && parallel=(-n "$TEST_WORKERS" --dist loadfile)
    if [[ $# -eq 0 ]]; then
        # The Docker engine restart runs last, in a pass of its own: it stops the engine
        # every other test's containers live on.
        say "pytest in ${TEST_WORKERS} worker(s) (SCOREBOX_TEST_WORKERS)"
        "$VENV/bin/pytest" "${parallel[@]}" --ignore="$engine_restart" || rc=$?
    else
        "$VENV/bin/pytest" "$@" || rc=$?
    fi
    if [[ "$rc" -eq 5 ]]; then
        die "pytest collected no tests (arguments: ${*:-none}): that is a failure"
    fi
    if [[ "$rc" -eq 0 && $# -eq 0 ]]; then
        # The first pass ran with warm check workers (SCOREBOX_REUSE=check, the default);
        # the suites of the per-job container path run again with a container per job: the
        # sandbox (isolation between jobs, limits, the container's end), result blocks, hostile
        # checks (what one job leaves behind) and the harness sabotage. The rest of
        # tests/security does not depend on the mode: secrets, bad input and work bounds are
        # API checks; the gateway, its bounds and flood go over the job's channel, the same
        # in a fresh container as in a warm one; kernel surface, output limit and runtimes run
        # each check once, and a check's first job has a fresh container in both modes (a warm
        # worker serves only later jobs of the same check); orphans and environment builds
        # make their containers themselves.
        say "sandbox, result-block, hostile-check and sabotage suites again with SCOREBOX_REUSE=never"
        SCOREBOX_REUSE=never "$VENV/bin/pytest" -q "${parallel[@]}" tests/integration/test_sandbox.py \
            tests/integration/test_result_blocks.py tests/security/test_hostile_checks.py \
            tests/security/test_harness_sabotage.py -k "not runsc" || rc=$?
    fi
    if [[ "$rc" -eq 0 && $# -eq 0 ]]; then
        # Results come back as blocks by default; the older one-record-per-row protocol
        # stays supported (SCOREBOX_RESULT_BLOCKS=false), and so stays attacked.
        say "the sabotage suite again with one result record per row"
        SCOREBOX_RESULT_BLOCKS=false "$VENV/bin/pytest" -q tests/security/test_harness_sabotage.py \
            -k "not runsc and not block" || rc=$?
    fi
    if [[ "$rc" -eq 0 && $# -eq 0 ]]; then
        say "the Docker engine restarted mid-run (stops and starts dockerd)"
        "$VENV/bin/pytest" -q "$engine_restart" || rc=$?
    fi
    return "$rc"
}

run_fast_tests() {
    # The unit tests alone: pure code and fakes, no Docker, PostgreSQL, Redis or browser,
    # no process spawned and no real backoff: what does either lives in tests/integration.
    # Schemathesis' pytest plugin serves the API fuzz test only (tests/api): not loaded here.
    # SCOREBOX_TEST_FAST=1: property tests run a tenth of their examples (tests/hypothesis_budget.py);
    # `test`, hence CI, runs them all.
    local rc=0
    SCOREBOX_TEST_FAST=1 "$VENV/bin/pytest" -q -p no:schemathesis tests/unit "$@" || rc=$?
    [[ "$rc" -eq 5 ]] && die "pytest collected no tests (arguments: ${*:-none}): that is a failure"
    return "$rc"
}

TOOLS="$ROOT/.scorebox/tools"

ensure_tools() {
    # uv (the lock) and pip-audit in a venv of their own: neither is a dependency of scorebox.
    if [[ ! -x "$TOOLS/bin/uv" || ! -x "$TOOLS/bin/pip-audit" ]]; then
        python3 -m venv "$TOOLS"
        "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check uv pip-audit
    fi
}

run_lock() {
    ensure_tools
    # --universal: one lock for every platform (markers kept); the header records this command.
    # From the checkout, with a relative output: the header records the command, and it
    # must name no path of this machine. Two locks from one pyproject.toml: dev.lock (what
    # .venv and CI install) and runtime.lock (what a deployment installs, docs/deploy.md:
    # the dependencies, the distributed and calibration extras, no test or lint tools).
    (cd "$ROOT" && "$TOOLS/bin/uv" pip compile pyproject.toml --extra dev --generate-hashes \
        --python-version 3.11 --universal --quiet -o requirements/dev.lock)
    (cd "$ROOT" && "$TOOLS/bin/uv" pip compile pyproject.toml --extra distributed --extra calibration --generate-hashes \
        --python-version 3.11 --universal --quiet -o requirements/runtime.lock)
    say "wrote requirements/dev.lock and requirements/runtime.lock; tests/unit/test_lock.py checks both against pyproject.toml"
}

run_audit() {
    # Known vulnerabilities in the locked versions. Not part of the CI gate: the services
    # pip-audit asks (PyPI's per-version JSON, OSV) may be unreachable. --strict makes a
    # package it could not check a failure, never a silent pass. Accepted findings, each
    # with its reason, are in requirements/audit-ignore.txt.
    ensure_tools
    local ignores=() id
    while read -r id _; do
        [[ -z "$id" || "$id" == \#* ]] && continue
        ignores+=(--ignore-vuln "$id")
    done <"$ROOT/requirements/audit-ignore.txt"
    "$TOOLS/bin/pip-audit" --strict --require-hashes --disable-pip -r "$LOCK" "${ignores[@]}" \
        || die "pip-audit failed: a known vulnerability (listed above), or a package it could not check (its services must be reachable); this is not a pass"
}

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

main() {
    local command="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$command" in
        setup) setup; say_path ;;
        demo) setup; run_demo; say_path ;;
        lint) ensure_venv; run_lint ;;
        test)
            ensure_venv
            start_test_venvs
            start_in_background lint run_lint
            setup
            start_servers postgres SCOREBOX_TEST_POSTGRES_URL
            start_servers redis SCOREBOX_TEST_REDIS_URL
            wait_for_background
            cat "$STATE/lint.log" >&2
            run_tests "$@"
            ;;
        test-fast) ensure_venv; run_fast_tests "$@" ;;
        lock) run_lock ;;
        audit) run_audit ;;
        docs) ensure_venv; run_docs "$@" ;;
        *) usage ;;
    esac
}

main "$@"
