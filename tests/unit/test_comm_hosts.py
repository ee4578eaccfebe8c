"""Where MPI ranks run (scaledl.comm.hosts): host lists, hostfiles, Slurm and the emulated cluster's form, the
command lines and environment they give mpiexec, the hints for what went wrong, and the sbatch scripts. No MPI
is started here (tests/cluster runs ranks across emulated hosts)."""

import re
import socket
from pathlib import Path

import pytest

from scaledl.comm import hosts as H
from scaledl.comm import netns

ROOT = Path(__file__).resolve().parents[2]


def test_one_machine_is_the_default_and_unchanged():
    h = H.resolve(None, environ={})
    assert h.local and h.nodes == 1 and h.env() == {}
    assert h.command("mpiexec", 3, ["py", "x.py"]) == ["mpiexec", "-n", "3", "py", "x.py"]
    assert H.resolve("local", environ={H.ENV_HOSTS: "a,b"}).local  # an explicit "local" wins over the variable


def test_a_host_list_places_ranks_host_by_host_over_tcp():
    h = H.resolve(["node1:2", "node2:2"], iface="ib0")
    assert (h.names, h.slots, h.nodes, h.ranks_per_node) == (("node1", "node2"), (2, 2), 2, 2)
    assert h.command("/x/mpiexec", 4, ["py"]) == ["/x/mpiexec", "-hosts", "node1:2,node2:2", "-iface", "ib0",
                                                  "-n", "4", "py"]
    env = h.env()
    assert env["MPICH_CH4_NETMOD"] == "ofi" and env["FI_PROVIDER"] == "tcp" and env["FI_TCP_IFACE"] == "ib0"
    assert "BatchMode=yes" in env["HYDRA_LAUNCHER_EXTRA_ARGS"] and "ConnectTimeout" in env["HYDRA_LAUNCHER_EXTRA_ARGS"]
    assert H.resolve("a,b:3").slots == (1, 3) and H.resolve("a,b:3").ranks_per_node is None
    auto = H.resolve("a,b", transport="auto")
    assert "MPICH_CH4_NETMOD" not in auto.env() and "FI_PROVIDER" not in auto.env()


def test_the_environment_chooses_when_the_caller_does_not():
    h = H.resolve(None, environ={H.ENV_HOSTS: "n1:1,n2:1", H.ENV_IFACE: "eth1"})
    assert h.names == ("n1", "n2") and h.iface == "eth1" and h.source == H.ENV_HOSTS
    assert H.resolve("n1,n2", iface="eth2", environ={H.ENV_IFACE: "eth1"}).iface == "eth2"


def test_a_hostfile(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# the course's nodes\nnode01:2\n\nnode02:2   # second rack\n")
    h = H.resolve(str(f))
    assert h.names == ("node01", "node02") and h.slots == (2, 2) and "hostfile" in h.source
    assert H.resolve(f).names == h.names  # a Path too


def test_slurm_and_srun(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "3")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "2(x3)")
    s = H.resolve("slurm", iface="eth0")
    assert s.nodes == 3 and s.ranks_per_node == 2
    assert s.command("mpiexec", 6, ["py"]) == ["mpiexec", "-launcher", "slurm", "-rmk", "slurm", "-iface", "eth0",
                                               "-n", "6", "py"]
    assert "HYDRA_LAUNCHER_EXTRA_ARGS" not in s.env()  # srun, not ssh, starts Hydra's proxies
    assert H.resolve("srun").env()["MPIR_CVAR_PMI_VERSION"] == "2"
    srun = H.resolve("srun").command("mpiexec", 6, ["py", "x.py"])
    assert srun[:4] == ["srun", "--mpi=pmi2", "--kill-on-bad-exit=1", "-n"] and srun[-2:] == ["py", "x.py"]


def test_an_emulated_cluster_runs_mpiexec_in_its_head_namespace():
    h = H.Hosts(kind="hosts", names=("10.1.2.11", "10.1.2.12"), slots=(1, 1), iface="eth0", control_iface="br0",
                launcher="rsh", launcher_exec="/tmp/l.sh", prefix=("ip", "netns", "exec", "head"))
    assert h.command("mpiexec", 2, ["py"]) == ["ip", "netns", "exec", "head", "mpiexec", "-hosts",
                                               "10.1.2.11:1,10.1.2.12:1", "-launcher", "rsh", "-launcher-exec",
                                               "/tmp/l.sh", "-iface", "br0", "-n", "2", "py"]
    assert h.env()["FI_TCP_IFACE"] == "eth0" and "HYDRA_LAUNCHER_EXTRA_ARGS" not in h.env()
    assert H.scratch_dir(h) is None  # one machine's files
    h.check()  # its names are addresses: nothing to resolve


@pytest.mark.parametrize("bad, match", [
    ("", r"expected host names"),
    ("node1,no de2", r"'no de2' is not a host name"),
    ("node1;rm -rf", r"is not a host name"),
    ("node1:0", r"must run at least one rank, got 0"),
])
def test_malformed_host_lists_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        H.resolve(bad)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match=r"iface must be a network interface name"):
        H.resolve("a,b", iface="eth0; reboot")
    with pytest.raises(ValueError, match=r"transport must be one of tcp, auto, got 'udp'"):
        H.resolve("a,b", transport="udp")
    with pytest.raises(TypeError, match=r"hosts must be None, 'local'"):
        H.resolve(42)


def test_a_host_that_does_not_resolve_fails_before_mpiexec(monkeypatch):
    def lookup(name, *args):
        if name == "nod3":
            raise socket.gaierror(-2, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 0))]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    H.resolve("node1,node2").check()
    with pytest.raises(ValueError, match=r"host 'nod3' \(hosts\) does not resolve: .*Name or service not known"):
        H.resolve("node1,nod3").check()


def test_launch_refuses_a_host_that_does_not_resolve_without_starting_anything(monkeypatch):
    from scaledl.comm import mpi as M

    if M.mpiexec_path() is None:
        pytest.skip("mpiexec not found: pip install mpich")

    def lookup(name, *args):
        raise socket.gaierror(-2, "Name or service not known")

    def popen(*args, **kwargs):
        raise AssertionError("mpiexec was started")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monkeypatch.setattr(M.subprocess, "Popen", popen)
    with pytest.raises(ValueError, match=r"host 'nowhere' \(hosts\) does not resolve"):
        M.launch(2, ["x.py"], hosts="nowhere,elsewhere")


@pytest.mark.parametrize("output, hint", [
    ("ssh: Could not resolve hostname nod3: Name or service not known", "does not resolve"),
    ("Host key verification failed.", "host key"),
    ("user@node2: Permission denied (publickey,password).", "ssh-copy-id"),
    ("ssh: connect to host node2 port 22: Connection timed out", "did not answer"),
    ("[proxy:0@n1] main: unable to connect to server login at port 41311 (check for firewalls!)", "MPIEXEC_PORT_RANGE"),
    ("MPIDI_OFI_create_vci_context(1058): OFI call ep_enable failed (default nic=tcp: Bad file descriptor)",
     "SCALEDL_MPI_IFACE must name an interface"),
    ("", "nothing came back from the ranks"),
    ("[mpiexec@login] ui_cmd_cb (pmiserv_pmci.c:51): Launch proxy failed.", "could not start its proxy"),
])
def test_failures_get_a_hint(output, hint):
    assert any(hint in h for h in H.explain_failure(output)), H.explain_failure(output)


def test_a_dead_rank_is_named_with_its_host_and_signal():
    out = ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 8120 RUNNING AT node2\n"
           "=   EXIT CODE: 9\n")
    hints = H.explain_failure(out)
    assert hints[0] == "the rank on node2 (pid 8120) ended with exit code 9 (SIGKILL: killed, e.g. out of memory)"
    assert any("a rank died" in h for h in hints)


def test_scratch_is_shared_across_hosts(tmp_path, monkeypatch):
    monkeypatch.setenv(H.ENV_SCRATCH, str(tmp_path / "shared"))
    assert H.scratch_dir(H.resolve("a,b")) == tmp_path / "shared" and (tmp_path / "shared").is_dir()
    assert H.scratch_dir(H.resolve(None, environ={})) is None


def test_tc_rates():
    assert netns.parse_rate("100mbit") == 12.5e6 and netns.parse_rate("10gbit") == 1.25e9
    for bad in ("100", "fast", "-1mbit", "0mbit", "1mbps"):
        with pytest.raises(ValueError, match=r"rate must be a positive tc rate"):
            netns.parse_rate(bad)


SBATCH = sorted((ROOT / "tools" / "cluster").glob("*.sbatch"))


def test_every_mpi_lab_has_a_ready_sbatch_script():
    names = {p.name for p in SBATCH}
    assert {"lab05.sbatch", "lab06.sbatch", "bench-mpi.sbatch"} <= names, names


@pytest.mark.parametrize("path", SBATCH, ids=lambda p: p.name)
def test_sbatch_scripts_are_complete(path):
    text = path.read_text()
    assert text.startswith("#!/bin/bash\n")
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", text, flags=re.M))
    assert {"job-name", "nodes", "ntasks-per-node", "time", "output"} <= set(directives), directives
    assert int(directives["nodes"]) >= 2  # across nodes, or it is the one-machine lab
    assert re.search(r"^export SCALEDL_MPI_HOSTS=(slurm|srun) ", text, flags=re.M) and "SCALEDL_MPI_IFACE" in text
    assert "set -euo pipefail" in text
    # the commands it runs exist in this checkout's package
    for module in re.findall(r"python -m ([\w.]+)", text):
        assert (ROOT / "src" / Path(*module.split("."))).with_suffix(".py").exists() or \
            (ROOT / "src" / Path(*module.split("."))).is_dir(), module
