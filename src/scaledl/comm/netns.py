"""A cluster on one Linux machine: network namespaces joined by veth pairs and a bridge, with shaped links.

Each *node* is a network namespace with one interface, ``eth0`` (one end of a veth pair), on a private /24; the
other end of every pair sits on a bridge in a *head* namespace (the switch, and the login node where ``mpiexec``
runs). MPI ranks run inside the node namespaces: Hydra starts them with a small launcher script that does
``ip netns exec NODE COMMAND`` where a real cluster would ssh (``-launcher rsh -launcher-exec SCRIPT``), and
they reach each other over TCP through the bridge, as across real machines (MPICH's shared memory stays within
a node; :mod:`scaledl.comm.hosts` picks the tcp transport).

Links are shaped with ``tbf`` on both ends of every pair, so a node's transmit and receive directions each run
at ``rate``: the NIC cable of :func:`scaledl.comm.topology.cluster`. Latency needs ``netem``, which some
kernels leave out (``tc qdisc add ... netem`` then says "Specified qdisc kind is unknown"):
:func:`netem_available` probes for it at run time, and ``delay`` is refused without it.

Everything needs root (CAP_NET_ADMIN) and ``ip``/``tc`` (iproute2); :func:`unavailable` says why not, for a
skip. Names carry this process's id and a random token, so clusters never collide, and :func:`remove_stale`
deletes those whose creator has died (a test run killed before its finalizers ran).

>>> parse_rate("100mbit"), parse_rate("1gbit"), parse_rate("2.5Gbit"), parse_rate("800kbit")
(12500000.0, 125000000.0, 312500000.0, 100000.0)
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from scaledl.comm.hosts import Hosts

__all__ = ["EmulatedCluster", "unavailable", "netem_available", "remove_stale", "parse_rate", "PREFIX",
           "DEFAULT_BURST", "DEFAULT_LIMIT", "NODE_IFACE", "TCP_PAYLOAD_FRACTION"]

PREFIX = "scaledl"
NODE_IFACE = "eth0"  # every node's interface has the same name, as on a real cluster: one FI_TCP_IFACE for all
# tbf's bucket: 4 KB, under 1 ms of tokens at 100 Mbit/s. Measured here (2 busy cores, TCP through two tbfs):
# 32kbit kept 95 % of 100 Mbit/s and 91 % of 400 Mbit/s; 1600 bytes lost 18-35 % to timer wake-ups; at
# 1 Gbit/s even 32kbit gave 45 %, so the emulated rates stay at a few hundred Mbit/s. A larger bucket lets
# the first bytes of every message through at memory speed: a knee that no alpha + n beta follows.
DEFAULT_BURST = "32kbit"
DEFAULT_LIMIT = "400ms"  # tbf's queue, as time at the rate: deep enough that TCP never loses a packet
# A full TCP segment at MTU 1500 carries 1448 bytes of 1514 on the wire (Ethernet 14, IP 20, TCP 20 + 12 of
# timestamps): the payload rate a shaped link can give at best.
TCP_PAYLOAD_FRACTION = 1448 / 1514
_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


def parse_rate(rate: str) -> float:
    """Bytes per second of a tc rate such as ``"100mbit"`` (tc's units are decimal: 1mbit = 10^6 bit/s).

    Raises:
        ValueError: anything but a number and bit/kbit/mbit/gbit/tbit.
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?bit)\s*", str(rate).lower())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"rate must be a positive tc rate such as '100mbit' or '1gbit', got {rate!r}")
    return float(m.group(1)) * _UNITS[m.group(2)] / 8


def _tools() -> tuple[str | None, str | None]:
    return shutil.which("ip") or _sbin("ip"), shutil.which("tc") or _sbin("tc")


def _sbin(name: str) -> str | None:
    for folder in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return f"{folder}/{name}"
    return None


def _run(*cmd, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(str(c) for c in cmd)} failed ({res.returncode}): "
                           f"{(res.stderr or res.stdout).strip()}")
    return res


def unavailable() -> str | None:
    """Why this machine cannot build an emulated cluster (not root, no iproute2, no namespaces), or None."""
    ip, tc = _tools()
    if ip is None or tc is None:
        return "ip and tc (iproute2) are not installed"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN); this process is not root"
    probe = f"{PREFIX}-{os.getpid()}-probe{secrets.token_hex(2)}"
    res = _run(ip, "netns", "add", probe, check=False)
    if res.returncode != 0:
        return f"ip netns add failed: {(res.stderr or res.stdout).strip()}"
    try:
        res = _run(ip, "-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1", check=False)
        if res.returncode != 0:
            return f"cannot create a veth pair: {(res.stderr or res.stdout).strip()}"
        res = _run(ip, "netns", "exec", probe, tc, "qdisc", "add", "dev", "probe0", "root", "tbf", "rate", "1mbit",
                   "burst", DEFAULT_BURST, "latency", DEFAULT_LIMIT, check=False)
        if res.returncode != 0:
            return f"tc cannot add a tbf qdisc: {(res.stderr or res.stdout).strip()}"
    finally:
        _run(ip, "netns", "delete", probe, check=False)
    return None


def netem_available() -> tuple[bool, str]:
    """(whether ``tc ... netem`` works here, what tc said), probed on a throwaway namespace's loopback."""
    ip, tc = _tools()
    probe = f"{PREFIX}-{os.getpid()}-netem{secrets.token_hex(2)}"
    if _run(ip, "netns", "add", probe, check=False).returncode != 0:
        return False, "cannot create a namespace to probe netem"
    try:
        res = _run(ip, "netns", "exec", probe, tc, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "100us",
                   check=False)
        return res.returncode == 0, (res.stderr or res.stdout).strip() or "netem works"
    finally:
        _run(ip, "netns", "delete", probe, check=False)


def remove_stale() -> list[str]:
    """Delete the namespaces of emulated clusters whose creating process is gone; returns their names."""
    ip, _ = _tools()
    if ip is None:
        return []
    res = _run(ip, "netns", "list", check=False)
    gone = []
    for line in res.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{PREFIX}-(\d+)-[\w-]+", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            _run(ip, "netns", "delete", name, check=False)
            gone.append(name)
    return gone


class EmulatedCluster:
    """``nodes`` namespaces on one bridge, each a machine with one NIC (``eth0``) shaped to ``rate``.

    Use it as a context manager (or call :meth:`close`): the namespaces, and with them every veth and qdisc,
    are deleted on exit, also when the body raises. :meth:`hosts` gives the :class:`~scaledl.comm.hosts.Hosts`
    that :func:`scaledl.comm.mpi.launch` and the labs' checks take.

    Raises:
        RuntimeError: the machine cannot build one (:func:`unavailable` says why), or an ip/tc command failed.
        ValueError: nodes outside 1..32, a malformed rate, a delay without netem.
    """

    def __init__(self, nodes: int, *, rate: str | None = None, burst: str = DEFAULT_BURST,
                 limit: str = DEFAULT_LIMIT, delay: str | None = None):
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 32:
            raise ValueError(f"nodes must be an int in 1..32, got {nodes!r}")
        why = unavailable()
        if why is not None:
            raise RuntimeError(f"cannot build an emulated cluster: {why}")
        self.ip, self.tc = _tools()
        token = secrets.token_hex(3)
        self.name = f"{PREFIX}-{os.getpid()}-{token}"
        self.head = f"{self.name}-head"
        self.node_ns = [f"{self.name}-n{k}" for k in range(nodes)]
        net = 200 + secrets.randbelow(50), secrets.randbelow(256)  # private, and only inside these namespaces
        self.subnet = f"10.{net[0]}.{net[1]}"
        self.head_ip = f"{self.subnet}.1"
        self.node_ips = [f"{self.subnet}.{11 + k}" for k in range(nodes)]
        self.ports = [f"port{k}" for k in range(nodes)]
        self._veth = [(f"sl{token}{k}a", f"sl{token}{k}b") for k in range(nodes)]
        self.shaping: dict = {}
        self._folder = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.launcher = self._folder / "netns-launcher.sh"
        self._made: list[str] = []
        try:
            self._build()
            if rate is not None or delay is not None:
                self.shape(rate, burst=burst, limit=limit, delay=delay)
        except BaseException:
            self.close()
            raise

    # -- building and tearing down --------------------------------------------------------------------------

    def _build(self) -> None:
        ip = self.ip
        _run(ip, "netns", "add", self.head)
        self._made.append(self.head)
        _run(ip, "-n", self.head, "link", "set", "lo", "up")
        _run(ip, "-n", self.head, "link", "add", "br0", "type", "bridge")
        _run(ip, "-n", self.head, "addr", "add", f"{self.head_ip}/24", "dev", "br0")
        _run(ip, "-n", self.head, "link", "set", "br0", "up")
        for k, (ns, (a, b)) in enumerate(zip(self.node_ns, self._veth)):
            _run(ip, "netns", "add", ns)
            self._made.append(ns)
            _run(ip, "-n", ns, "link", "set", "lo", "up")
            # created inside the node, its peer moved to the head: nothing is ever made in this namespace
            _run(ip, "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
            _run(ip, "-n", ns, "link", "set", b, "netns", self.head)
            _run(ip, "-n", ns, "link", "set", a, "name", NODE_IFACE)
            _run(ip, "-n", ns, "addr", "add", f"{self.node_ips[k]}/24", "dev", NODE_IFACE)
            _run(ip, "-n", ns, "link", "set", NODE_IFACE, "up")
            _run(ip, "-n", self.head, "link", "set", b, "name", self.ports[k])
            _run(ip, "-n", self.head, "link", "set", self.ports[k], "master", "br0")
            _run(ip, "-n", self.head, "link", "set", self.ports[k], "up")
        cases = "\n".join(f"  {addr}) ns={ns} ;;" for addr, ns in zip(self.node_ips, self.node_ns))
        self.launcher.write_text(
            "#!/bin/sh\n"
            "# Hydra's launcher for an emulated cluster (scaledl.comm.netns): called as SCRIPT HOST COMMAND, it\n"
            "# runs COMMAND in HOST's network namespace, where a real cluster would ssh to HOST.\n"
            'host="$1"; shift\n'
            'case "$host" in\n'
            f"{cases}\n"
            f'  *) echo "emulated cluster {self.name}: no node $host (nodes: {" ".join(self.node_ips)})" >&2; '
            "exit 255 ;;\n"
            "esac\n"
            f'exec {ip} netns exec "$ns" sh -c "$*"\n')
        self.launcher.chmod(0o755)

    def kill_processes(self) -> list[int]:
        """SIGKILL every process left in the cluster's namespaces (a node's proxy still trying to reach an
        mpiexec that is gone: it left mpiexec's process tree when that ended, so no kill of the tree found
        it); returns their ids."""
        killed = []
        for ns in self._made:
            res = _run(self.ip, "netns", "pids", ns, check=False)
            for pid in res.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
                except (ProcessLookupError, ValueError):
                    pass
        return killed

    def close(self) -> None:
        """Kill what still runs inside, delete every namespace (their veths and qdiscs go with them) and the
        launcher script; idempotent. A namespace whose name is deleted lives on while a process uses it, so
        the processes go first."""
        self.kill_processes()
        for ns in reversed(self._made):
            _run(self.ip, "netns", "delete", ns, check=False)
        self._made = []
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> "EmulatedCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # a last resort; fixtures and with-blocks close explicitly
        if getattr(self, "_made", None):
            self.close()

    # -- using it ---------------------------------------------------------------------------------------------

    @property
    def nodes(self) -> int:
        return len(self.node_ns)

    def hosts(self, ranks_per_node: int = 1, *, nodes: int | None = None) -> Hosts:
        """Where :func:`scaledl.comm.mpi.launch` runs ranks on the first ``nodes`` nodes (all by default),
        ``ranks_per_node`` each, ranks filling node 0 first."""
        nodes = self.nodes if nodes is None else int(nodes)
        if not 1 <= nodes <= self.nodes or int(ranks_per_node) < 1:
            raise ValueError(f"nodes must be in 1..{self.nodes} and ranks_per_node >= 1, got {nodes}, "
                             f"{ranks_per_node!r}")
        return Hosts(kind="hosts", names=tuple(self.node_ips[:nodes]), slots=(int(ranks_per_node),) * nodes,
                     iface=NODE_IFACE, control_iface="br0", launcher="rsh", launcher_exec=str(self.launcher),
                     prefix=(self.ip, "netns", "exec", self.head), source=f"emulated cluster {self.name}")

    def _qdisc(self, ns: str, dev: str, rate, burst, limit, delay) -> None:
        tc = ("ip", "netns", "exec", ns, self.tc)
        _run(self.ip, *tc[1:], "qdisc", "del", "dev", dev, "root", check=False)
        tbf = ["tbf", "rate", rate, "burst", burst, "latency", limit]
        if delay is None and rate is not None:
            _run(self.ip, *tc[1:], "qdisc", "add", "dev", dev, "root", *tbf)
        elif delay is not None:  # netem delays, tbf (its child) paces: the tc-netem manual's rate example
            _run(self.ip, *tc[1:], "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", delay)
            if rate is not None:
                _run(self.ip, *tc[1:], "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf)

    def shape(self, rate: str | None, *, burst: str = DEFAULT_BURST, limit: str = DEFAULT_LIMIT,
              delay: str | None = None) -> dict:
        """Shape every node's transmit (its ``eth0``) and receive (its bridge port) direction to ``rate``
        with tbf, and with ``delay`` of netem on each where the kernel has it; ``rate=None`` and no delay
        removes the shaping. Returns (and keeps in ``self.shaping``) the settings, for a record.

        Raises:
            ValueError: a malformed rate, or a delay on a kernel without netem.
        """
        if rate is not None:
            parse_rate(rate)
        if delay is not None:
            ok, said = netem_available()
            if not ok:
                raise ValueError(f"delay={delay!r} needs tc's netem, which this kernel lacks ({said})")
        for ns, port in zip(self.node_ns, self.ports):
            self._qdisc(ns, NODE_IFACE, rate, burst, limit, delay)
            self._qdisc(self.head, port, rate, burst, limit, delay)
        self.shaping = {"qdisc": "tbf" if rate is not None else None, "rate": rate, "burst": burst if rate else None,
                        "latency": limit if rate else None, "netem_delay": delay,
                        "where": "every node's eth0 (transmit) and its bridge port (receive)"}
        return dict(self.shaping)

    def set_reachable(self, node: int, reachable: bool) -> None:
        """Take node ``node`` off the bridge (its packets then vanish, as behind a dead switch port or a
        firewall that drops them) or put it back. The node's own link stays up, so nothing fails at once:
        TCP waits for answers that never come."""
        port = self.ports[node]
        if reachable:
            _run(self.ip, "-n", self.head, "link", "set", port, "master", "br0")
        else:
            _run(self.ip, "-n", self.head, "link", "set", port, "nomaster")

    def tcp_settings(self) -> dict:
        """The nodes' TCP congestion control and whether a connection idle past its retransmission timeout
        starts slow again (tcp_slow_start_after_idle): what decides how the first bytes of a message go."""
        out = {}
        for key in ("tcp_congestion_control", "tcp_slow_start_after_idle"):
            res = _run(self.ip, "netns", "exec", self.node_ns[0], "cat", f"/proc/sys/net/ipv4/{key}", check=False)
            out[key] = res.stdout.strip() or None
        return out

    def interface_bytes(self, node: int) -> int:
        """Bytes node ``node`` has sent on its eth0: proof that ranks talked over the network."""
        res = _run(self.ip, "netns", "exec", self.node_ns[node], "cat",
                   f"/sys/class/net/{NODE_IFACE}/statistics/tx_bytes")
        return int(res.stdout.strip())
