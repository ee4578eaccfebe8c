"""Take on a grading run's resource limits, then become the run (a trampoline, started as a plain script).

    python -I -S enter_limits.py '{"rlimits": {...}, "cgroup_procs": [...]}' -- COMMAND...

The sandbox starts every run through this script instead of a ``preexec_fn``: CPython documents ``preexec_fn`` as
unsafe where threads run (the child may deadlock before ``exec``), and ``scaledl course grade --jobs N`` runs
its sandboxes from a thread pool. Standard library only, and ``-I -S``: nothing of the environment, the
virtual environment or scaledl is imported on the way, so the limits hold before any other code runs. The
rlimits are inherited through bwrap and setpriv; the pid goes into the run's cgroup, whose limits then cover
every process the run starts.
"""

import json
import os
import resource
import sys


def main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    command = argv[argv.index("--") + 1:]
    for name, value in spec.get("rlimits", {}).items():
        res = getattr(resource, name)
        _, hard = resource.getrlimit(res)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)  # only root may raise a hard limit
        resource.setrlimit(res, (value, value))
    for procs in spec.get("cgroup_procs", []):
        try:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass  # the rlimits and the namespaces still hold; failing here would lose the whole run
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
