"""The sandbox harness: what runs inside the container, serving jobs of one check.

Stdlib only (plus :mod:`engine.contract`), and carried into the image whole, with
``engine/contract/`` and ``engine/checks.py`` (engine/sandbox/docker/image/context.py);
started as ``python -m engine.harness [IDLE_EXIT_SECONDS]`` (:mod:`engine.harness.__main__`).
Importing this package does nothing: each module is imported where it is used.

The process is split in two so that nothing a check does can reach the result
channel or survive its job:

* the **parent** (never running user code) reads jobs from stdin and owns the private
  result channel (:mod:`~engine.harness.channel`), frames every record with the job's
  nonce, and is non-dumpable, so a check can neither ptrace it nor open its descriptors
  through /proc (:mod:`~engine.harness.confine`);
* for each job it **forks a child** (:mod:`~engine.harness.supervise`,
  :mod:`~engine.harness.fork`) that (as the
  image's unprivileged user when the parent runs as root, which it does under gVisor)
  closes stdin and the result channel, loads the check from the job's source into a fresh
  module (never from a file on ``sys.path``), binds each row's arguments from the job's
  columns (:mod:`~engine.harness.binding`) and writes one plain JSON record per row to a
  pipe, or each row's result into memory shared with the parent
  (:mod:`~engine.harness.child`, :mod:`~engine.harness.blocks`). The parent checks every
  record before relaying it, and is the per-row watchdog.

The parent is the container's PID 1 (the host starts it in place of the image's tini), so
no other process holds the container's stdin and stdout, a check cannot signal it
(``kill(-1)`` skips PID 1, and the parent ignores SIGINT), and every orphan is its child.
Under gVisor it runs as root inside the sandbox and each child drops to the image's user.
A check's model calls reach the host through the parent's loopback endpoint
(:mod:`~engine.harness.gateway`).

Between jobs the parent kills every other process and empties /tmp and /dev/shm
(:mod:`~engine.harness.reset`), so the next job starts from a clean slate: it does so
right after a job's ``done`` (sent once the job's last child is killed) and reads the
next job only after it, exiting instead when a container it said was reusable cannot be
cleaned. Only then does it
fork the next job's child ahead, which loads the check and waits for its job
(:mod:`~engine.harness.ahead`; killed, and the container reset again, if unused). With no
job for IDLE_EXIT_SECONDS (the host died, say) it exits, and the container with it.
"""
