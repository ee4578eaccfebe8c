"""Where MPI ranks run: this machine (the default), a list of hosts reached over ssh, a Slurm allocation, or an
emulated cluster of network namespaces (:mod:`scaledl.comm.netns`).

:func:`resolve` turns what a caller or the environment says into a :class:`Hosts`; :func:`scaledl.comm.mpi.launch`
asks it for the command line (:meth:`Hosts.command`) and the ranks' environment (:meth:`Hosts.env`). The forms:

- nothing, or ``"local"``: ``mpiexec -n p`` on this machine, as before (MPICH's shared memory between ranks);
- ``"node1:2,node2:2"`` or ``["node1:2", "node2:2"]``: MPICH's ``-hosts``, ``name[:ranks]``, ranks filling the
  first host first, so rank = node x ranks_per_node + local; Hydra starts them over ssh;
- the path of a hostfile (MPICH's ``-f`` format: one ``name[:ranks]`` a line, ``#`` comments);
- ``"slurm"``: inside ``salloc`` or ``sbatch``, ``mpiexec -launcher slurm -rmk slurm``: Hydra takes the nodes
  and the ranks per node from the allocation and starts them with ``srun``;
- ``"srun"``: no mpiexec, ``srun --mpi=pmi2 -n p``: Slurm starts the ranks and serves PMI-2 itself.

When the caller passes none, ``SCALEDL_MPI_HOSTS`` is read (so a course sets it once, in the JupyterHub or the
batch script, and the labs' checks run across the nodes unchanged), and ``SCALEDL_MPI_IFACE`` names the network
interface. Between hosts the ranks talk TCP (``transport="tcp"``): MPICH's OFI netmod with libfabric's tcp
provider, on ``iface`` (``FI_TCP_IFACE``), which is also where Hydra listens for its proxies (``-iface``).
``transport="auto"`` leaves the choice to MPICH (UCX first: InfiniBand where a node has it).

>>> h = resolve("node1:2,node2:2", iface="eth0")
>>> h.nodes, h.ranks_per_node, h.command("mpiexec", 4, ["python", "x.py"])
(2, 2, ['mpiexec', '-hosts', 'node1:2,node2:2', '-iface', 'eth0', '-n', '4', 'python', 'x.py'])
>>> sorted(h.env())
['FI_PROVIDER', 'FI_TCP_IFACE', 'HYDRA_LAUNCHER_EXTRA_ARGS', 'MPICH_CH4_NETMOD']
>>> resolve(None, environ={}).command("mpiexec", 2, ["python", "x.py"])  # one machine: unchanged
['mpiexec', '-n', '2', 'python', 'x.py']
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path

from scaledl._args import UsageError

__all__ = ["Hosts", "resolve", "parse_host_list", "read_hostfile", "explain_failure", "scratch_dir", "ENV_HOSTS",
           "ENV_IFACE", "ENV_SCRATCH", "KINDS", "TRANSPORTS", "SSH_OPTIONS"]

ENV_HOSTS = "SCALEDL_MPI_HOSTS"
ENV_IFACE = "SCALEDL_MPI_IFACE"
ENV_SCRATCH = "SCALEDL_MPI_SCRATCH"
KINDS = ("local", "hosts", "slurm", "srun")
TRANSPORTS = ("tcp", "auto")
# ssh as Hydra's launcher: never prompt (a password or an unknown host key would wait forever on a terminal
# nobody sees), and give up on a node that does not answer within 10 s instead of ssh's default of minutes.
SSH_OPTIONS = "-o BatchMode=yes -o ConnectTimeout=10"
_NAME = re.compile(r"^[A-Za-z0-9_.\-\[\]:%]+$")  # host names, IPv4, bracketed IPv6; no spaces or shell syntax
_IFACE = re.compile(r"^[A-Za-z0-9_.:@\-]{1,15}$")  # Linux interface names are at most 15 characters


@dataclass(frozen=True)
class Hosts:
    """Where ``mpiexec`` puts the ranks, and how they reach each other. See the module docstring."""

    kind: str = "local"
    names: tuple[str, ...] = ()
    slots: tuple[int, ...] = ()  # ranks per host, in rank order
    iface: str | None = None  # the ranks' network interface (FI_TCP_IFACE), and Hydra's unless control_iface
    control_iface: str | None = None  # where mpiexec listens for its proxies (Hydra's -iface), if not iface
    transport: str = "tcp"
    launcher: str | None = None  # Hydra's launcher (ssh when None), e.g. "rsh" with a launcher_exec script
    launcher_exec: str | None = None
    prefix: tuple[str, ...] = ()  # a command mpiexec runs under (an emulated cluster's head namespace)
    source: str = ""  # where the hosts came from, for messages
    extra_env: dict = field(default_factory=dict, compare=False)  # more variables for the ranks

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UsageError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.transport not in TRANSPORTS:
            raise UsageError(f"transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.kind == "hosts" and (not self.names or len(self.slots) != len(self.names)):
            raise UsageError(f"hosts: expected one or more names, each with its ranks, got names {self.names!r} "
                             f"and slots {self.slots!r}")
        for iface in (self.iface, self.control_iface):
            if iface is not None and not _IFACE.match(iface):
                raise UsageError(f"iface must be a network interface name such as eth0 or ib0 (at most 15 "
                                 f"letters, digits or ._-:@), got {iface!r}")

    @property
    def local(self) -> bool:
        return self.kind == "local"

    @property
    def nodes(self) -> int | None:
        """How many machines: 1 here, the hosts listed, or the Slurm allocation's (None outside one)."""
        if self.kind == "local":
            return 1
        if self.kind == "hosts":
            return len(self.names)
        value = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES")
        return int(value) if value and value.isdigit() else None

    @property
    def ranks_per_node(self) -> int | None:
        """The ranks on each host when every host has as many, else None (Slurm: from the allocation)."""
        if self.kind == "hosts":
            return self.slots[0] if len(set(self.slots)) == 1 else None
        if self.kind == "local":
            return None
        m = re.fullmatch(r"(\d+)(?:\(x\d+\))?", os.environ.get("SLURM_TASKS_PER_NODE", ""))
        return int(m.group(1)) if m else None

    def host_list(self) -> str:
        """The ``-hosts`` argument: ``name:ranks`` joined by commas."""
        return ",".join(f"{n}:{s}" for n, s in zip(self.names, self.slots))

    def describe(self) -> str:
        """A few words for messages: which machines, and from where."""
        if self.kind == "local":
            return "this machine"
        if self.kind == "hosts":
            shown = ", ".join(self.names[:4]) + (f" and {len(self.names) - 4} more" if len(self.names) > 4 else "")
            return f"{len(self.names)} hosts ({shown}{'; ' + self.source if self.source else ''})"
        return "the Slurm allocation" + (f" ({self.nodes} nodes)" if self.nodes else "")

    def command(self, mpiexec: str, p: int, program: list[str]) -> list[str]:
        """The command line that starts ``p`` ranks of ``program`` (``[python, args...]``)."""
        p = int(p)
        if self.kind == "srun":
            return [*self.prefix, "srun", "--mpi=pmi2", "--kill-on-bad-exit=1", "-n", str(p), *program]
        cmd = [*self.prefix, mpiexec]
        if self.kind == "hosts":
            cmd += ["-hosts", self.host_list()]
            if self.launcher:
                cmd += ["-launcher", self.launcher]
            if self.launcher_exec:
                cmd += ["-launcher-exec", self.launcher_exec]
        elif self.kind == "slurm":
            cmd += ["-launcher", "slurm", "-rmk", "slurm"]
        control = self.control_iface or self.iface
        if control and self.kind != "local":
            cmd += ["-iface", control]
        return cmd + ["-n", str(p), *program]

    def env(self) -> dict[str, str]:
        """Variables for mpiexec and the ranks (Hydra passes its whole environment to every rank)."""
        if self.kind == "local":
            return dict(self.extra_env)
        out = {}
        if self.transport == "tcp":
            # the OFI netmod over libfabric's tcp provider: plain sockets between hosts. (The wheel's default,
            # UCX, also speaks TCP between real hosts, but picks shared memory between namespaces of one
            # machine: the emulated cluster would not cross its network.)
            out.update(MPICH_CH4_NETMOD="ofi", FI_PROVIDER="tcp")
            if self.iface:
                out["FI_TCP_IFACE"] = self.iface
        if self.kind == "srun":  # Slurm's pmi2 plugin serves the ranks; MPICH's PMI client must speak PMI-2
            out["MPIR_CVAR_PMI_VERSION"] = "2"
        if self.kind == "hosts" and self.launcher in (None, "ssh"):
            out["HYDRA_LAUNCHER_EXTRA_ARGS"] = os.environ.get("HYDRA_LAUNCHER_EXTRA_ARGS", SSH_OPTIONS)
        out.update(self.extra_env)
        return out

    def check(self) -> None:
        """Fail early and clearly on a host name that does not resolve (before Hydra, which would say less).

        Raises:
            ValueError: a name that neither DNS nor /etc/hosts knows.
        """
        if self.kind != "hosts" or self.prefix:  # an emulated cluster's names are its own addresses
            return
        for name in self.names:
            try:
                socket.getaddrinfo(name.strip("[]"), None)
            except (socket.gaierror, UnicodeError) as err:
                raise UsageError(f"host {name!r} ({self.source or 'hosts'}) does not resolve: {err}; check the "
                                 "name against the cluster's node list, or give an IP address") from None


def parse_host_list(spec, *, source: str = "hosts") -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Names and ranks per host from ``"a:2,b:2"`` or ``["a:2", "b"]`` (one rank where none is given).

    >>> parse_host_list("node1:2, node2:2")
    (('node1', 'node2'), (2, 2))

    Raises:
        ValueError: an empty list, a name with spaces or shell characters, ranks that are not a positive count.
    """
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    items = [s for s in items if s]
    if not items:
        raise UsageError(f"{source}: expected host names such as 'node1:2,node2:2', got {spec!r}")
    names, slots = [], []
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{source}: each host must be a string 'name[:ranks]', got {item!r}")
        name, _, count = item.rpartition(":") if re.search(r":\d+$", item) else (item, "", "")
        if not _NAME.match(name):
            raise UsageError(f"{source}: {name!r} is not a host name (letters, digits, '.', '-', '_')")
        if count and int(count) < 1:
            raise UsageError(f"{source}: host {name!r} must run at least one rank, got {count}")
        names.append(name)
        slots.append(int(count) if count else 1)
    return tuple(names), tuple(slots)


def read_hostfile(path) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """MPICH's hostfile: one ``name[:ranks]`` a line; ``#`` starts a comment.

    Raises:
        FileNotFoundError: no such file. ValueError: as :func:`parse_host_list`.
    """
    path = Path(path)
    lines = [ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines()]
    return parse_host_list([ln for ln in lines if ln], source=f"hostfile {path}")


def resolve(hosts=None, *, iface: str | None = None, transport: str = "tcp", environ=None) -> Hosts:
    """A :class:`Hosts` from ``hosts`` (see the module docstring), else from ``SCALEDL_MPI_HOSTS``, else this
    machine. ``iface`` defaults to ``SCALEDL_MPI_IFACE``.

    Raises:
        ValueError / TypeError: a malformed host list, an unknown form, a bad interface name or transport.
    """
    environ = os.environ if environ is None else environ
    if isinstance(hosts, Hosts):
        return hosts if iface is None else replace(hosts, iface=iface)
    source = "hosts"
    if hosts is None:
        hosts = environ.get(ENV_HOSTS) or None
        source = ENV_HOSTS
    iface = iface or environ.get(ENV_IFACE) or None
    if hosts is None or hosts == "local":
        return Hosts()
    if hosts in ("slurm", "srun"):
        return Hosts(kind=hosts, iface=iface, transport=transport, source=source)
    if isinstance(hosts, os.PathLike) or (isinstance(hosts, str) and "," not in hosts and Path(hosts).is_file()):
        names, slots = read_hostfile(hosts)
        source = f"hostfile {hosts}"
    elif isinstance(hosts, (str, list, tuple)):
        names, slots = parse_host_list(hosts, source=source)
    else:
        raise TypeError(f"hosts must be None, 'local', 'slurm', 'srun', a host list or a hostfile path, got "
                        f"{hosts!r} ({type(hosts).__name__})")
    return Hosts(kind="hosts", names=names, slots=slots, iface=iface, transport=transport, source=source)


# What Hydra, ssh or MPICH print when a node is wrong, and what to do about it (first match per line).
_EXPLAIN = (
    (r"Could not resolve hostname|Name or service not known", "a host name does not resolve: check the list"),
    (r"Host key verification failed", "ssh does not know that node's host key yet: ssh to it once by hand "
                                      "(or the course adds the nodes to a shared known_hosts)"),
    (r"Permission denied \(publickey", "ssh needs a key without a passphrase from this machine to every node "
                                       "(ssh-keygen, then ssh-copy-id NODE)"),
    (r"Connection timed out|No route to host|Network is unreachable|Connection refused.*port 22",
     "a node did not answer: it is down, or a firewall blocks ssh (port 22) or the ranks' ports"),
    (r"Launch proxy failed", "mpiexec could not start its proxy on a host: the launcher (ssh) failed for it; "
                             "its message, where it left one, is above; try ssh HOST true by hand"),
    (r"unable to connect to server|check for firewalls", "a node could not connect back to mpiexec on this "
     "machine: allow the nodes to reach it (MPIEXEC_PORT_RANGE=50000:50100 fixes the ports to open) and set "
     f"{ENV_IFACE} to the interface the nodes share"),
    (r"KILLED BY SIGNAL|BAD TERMINATION|killed by signal", "a rank died (the line above names its signal or "
                                                          "exit code): the others were stopped"),
    (r"OFI[^\n]*(failed|error)|fi_getinfo|No data available", f"MPICH could not open its network on a node: "
     f"{ENV_IFACE} must name an interface every node has (ip -brief addr), and the ranks' ports (libfabric: "
     "FI_TCP_PORT_LOW_RANGE / FI_TCP_PORT_HIGH_RANGE) must be open between the nodes"),
)


def explain_failure(output: str) -> list[str]:
    """Hints for the failures of a multi-host run that ``output`` (mpiexec's) shows, most specific first.

    >>> explain_failure("ssh: Could not resolve hostname nod3: Name or service not known")
    ['a host name does not resolve: check the list']
    >>> explain_failure("=   PID 8120 RUNNING AT 10.0.0.12\\n=   EXIT CODE: 9\\n")[0]
    'the rank on 10.0.0.12 (pid 8120) ended with exit code 9 (SIGKILL: killed, e.g. out of memory)'
    """
    hints = []
    if not output.strip():
        hints.append("nothing came back from the ranks: a node may be unreachable (from this machine, or this "
                     "machine from it); try ssh NODE, and check the firewall")
    for pid, host, code in re.findall(r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*EXIT CODE: (\d+)", output):
        name = {9: "SIGKILL: killed, e.g. out of memory", 11: "SIGSEGV: a crash", 15: "SIGTERM: stopped",
                6: "SIGABRT: aborted"}.get(int(code))
        hints.append(f"the rank on {host} (pid {pid}) ended with exit code {code}" + (f" ({name})" if name else ""))
    for pattern, hint in _EXPLAIN:
        if re.search(pattern, output) and hint not in hints:
            hints.append(hint)
    return hints


def scratch_dir(hosts: Hosts) -> Path | None:
    """Where a check writes the files its ranks read: None (a temporary folder) on one machine; across hosts a
    folder every node sees, ``SCALEDL_MPI_SCRATCH`` or ``~/.cache/scaledl/mpi`` (home directories are shared on
    a cluster; /tmp is each node's own)."""
    if hosts.local or hosts.prefix:  # an emulated cluster shares this machine's files
        return None
    folder = Path(os.environ.get(ENV_SCRATCH) or Path.home() / ".cache" / "scaledl" / "mpi")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
