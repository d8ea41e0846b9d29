"""Every hardening flag (docs/security.md) is on every container, by default."""

from __future__ import annotations

from engine.models import Limits
from engine.sandbox.docker.containers import container_options, is_gvisor
from engine.sandbox.jobstream import describe_exit
from engine.settings import Settings


def options(**settings: object) -> dict[str, object]:
    return container_options(Settings(**settings), Limits(), {"scorebox.tenant": "t1"})


def test_network_filesystem_and_user() -> None:
    opts = options()
    assert opts["network_mode"] == "none"
    assert opts["network_disabled"] is True
    assert opts["read_only"] is True
    assert opts["tmpfs"] == {"/tmp": "rw,noexec,nosuid,nodev,size=16m,mode=1777"}
    assert opts["user"] == "10001:10001"
    assert "volumes" not in opts and "mounts" not in opts


def test_privileges_and_resources() -> None:
    opts = options()
    assert opts["cap_drop"] == ["ALL"]
    assert opts["security_opt"] == ["no-new-privileges"]
    assert opts["pids_limit"] == 64
    assert opts["mem_limit"] == opts["memswap_limit"] == "256m"
    assert opts["nano_cpus"] == 1_000_000_000
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in opts["ulimits"]}  # type: ignore[attr-defined]
    assert ulimits["core"] == (0, 0)
    assert ulimits["nofile"] == (256, 256)
    assert ulimits["fsize"] == (16 * 1024 * 1024,) * 2


def test_empty_environment_labels_and_no_logs() -> None:
    opts = options(container_labels={"scorebox.test": "1"})
    assert opts["environment"] == {}
    labels = opts["labels"]
    assert isinstance(labels, dict)
    assert labels["scorebox.managed"] == "1"
    assert labels["scorebox.tenant"] == "t1"
    assert labels["scorebox.test"] == "1"
    assert ":" in labels["scorebox.owner"]
    assert opts["log_config"]["Type"] == "none"  # type: ignore[index]


def test_runtime_is_configurable() -> None:
    assert "runtime" not in options()
    assert options(runtime="runsc")["runtime"] == "runsc"


def test_limits_flow_into_options() -> None:
    limits = Limits(memory_mb=64, max_pids=16, cpus=0.5, tmpfs_mb=4)
    opts = container_options(Settings(), limits, {})
    assert opts["mem_limit"] == "64m"
    assert opts["pids_limit"] == 16
    assert opts["nano_cpus"] == 500_000_000
    assert "size=4m" in opts["tmpfs"]["/tmp"]


def test_no_nproc_rlimit_under_runc() -> None:
    # RLIMIT_NPROC is counted by the host kernel per uid, across every container.
    opts = container_options(Settings(), Limits(max_pids=16), {})
    assert "nproc" not in {u["Name"] for u in opts["ulimits"]}


def test_gvisor_counts_processes_inside_and_leaves_room_for_its_own_threads() -> None:
    # Under gVisor the container's pids cgroup also holds the sandbox kernel's threads and
    # ptrace stubs; a cgroup limit of max_pids killed gVisor itself (exit code 2).
    opts = container_options(Settings(runtime="runsc"), Limits(max_pids=16), {}, gvisor=True)
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in opts["ulimits"]}
    assert ulimits["nproc"] == (16, 16)
    assert opts["pids_limit"] == 16 * 16 + 192


def test_gvisor_is_recognised_by_name_or_path() -> None:
    assert is_gvisor("runsc")
    assert is_gvisor("gvisor", {"gvisor": {"path": "/usr/local/bin/runsc"}})
    assert not is_gvisor("runc", {"runc": {"path": "runc"}})
    assert not is_gvisor(None)


def test_describe_exit_names_the_signal() -> None:
    assert "SIGSEGV" in describe_exit(139, "")
    assert "code 3" in describe_exit(3, "")
    assert "Segmentation fault" in describe_exit(139, "Fatal Python error: Segmentation fault\n")


def test_under_gvisor_the_harness_starts_as_sandbox_root_with_five_capabilities() -> None:
    # gVisor's procfs ignores non-dumpable for /proc/<pid>/fd: only another uid keeps a
    # check from the harness's descriptors, so the parent starts as root inside gVisor and
    # drops each check process to 10001 (tests/security: the stolen-nonce case).
    runc = container_options(Settings(), Limits(), {})
    assert runc["user"] == "10001:10001" and "cap_add" not in runc
    gvisor = container_options(Settings(runtime="runsc"), Limits(), {}, gvisor=True)
    assert gvisor["user"] == "0:0"
    assert gvisor["cap_drop"] == ["ALL"]
    assert gvisor["cap_add"] == ["SETUID", "SETGID", "KILL", "DAC_OVERRIDE", "FOWNER"]
    assert gvisor["security_opt"] == ["no-new-privileges"]


def test_a_container_that_finished_before_its_job_was_sent_is_stale() -> None:
    """After an engine restart a warm container is dead before its job reaches it: that is
    the sandbox's failure (rerun elsewhere), never the check's crash."""
    from datetime import UTC, datetime

    from engine.sandbox.docker.channel import finished_before

    sent = datetime(2026, 11, 25, 18, 0, 10, tzinfo=UTC).timestamp()
    assert finished_before({"FinishedAt": "2026-11-25T18:00:00.123456789Z"}, sent)
    assert not finished_before({"FinishedAt": "2026-11-25T18:00:09.5Z"}, sent)  # 1 s slack
    assert not finished_before({"FinishedAt": "2026-11-25T18:00:12Z"}, sent)
    assert not finished_before({"FinishedAt": "0001-01-01T00:00:00Z"}, sent)  # never ran
    assert not finished_before({}, sent)
    assert not finished_before({"FinishedAt": "garbage"}, sent)


def test_a_harness_that_ended_itself_unclean_is_not_a_lost_engine() -> None:
    import socket
    import time
    from types import SimpleNamespace

    from engine.harness.reset import UNCLEAN_EXIT_CODE
    from engine.sandbox.docker.channel import AttachedContainer, DockerChannel

    lost: list[str] = []
    for exit_code, stale in ((UNCLEAN_EXIT_CODE, False), (0, True)):
        # It ended long before the job was sent (its reset failed after the last "done").
        state = {"ExitCode": exit_code, "FinishedAt": "2026-11-25T18:00:00Z"}
        container = SimpleNamespace(
            id="c" * 64, wait=lambda timeout: None, reload=lambda: None, attrs={"State": state}
        )
        ours, theirs = socket.socketpair()
        channel = DockerChannel(
            AttachedContainer(container, ours),
            None,  # type: ignore[arg-type]  # the job is not read here
            release=lambda attached, reusable: None,
            engine_lost=lost.append,
        )
        channel._sent_at = time.time()
        exit_state = channel.exit_state()
        assert (exit_state.lost is not None) is stale
        assert exit_state.exit_code == (None if stale else UNCLEAN_EXIT_CODE)
        for sock in (ours, theirs):
            sock.close()
    assert len(lost) == 1  # only the stale one counts as the engine going away
