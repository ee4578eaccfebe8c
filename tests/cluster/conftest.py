"""The emulated-cluster tier: network namespaces joined by veth pairs and a bridge, links shaped by tbf
(scaledl.comm.netns). Needs root and iproute2; skipped, saying why, elsewhere, and made to fail instead where
SCALEDL_REQUIRE_CLUSTER=1 (CI runs as root, so there this tier must run)."""

import os

import pytest

from scaledl.comm import netns
from scaledl.comm.mpi import mpiexec_path

NODES = 4
RATE = "100mbit"  # 12.5 MB/s: a 64 KiB message is 5 ms, far above this machine's scheduling noise


def _why_not() -> str | None:
    if mpiexec_path() is None:
        return "mpiexec not found: pip install mpich (the book's MPI runtime)"
    return netns.unavailable()


@pytest.fixture(scope="session")
def cluster_or_skip():
    """Skip (or, with SCALEDL_REQUIRE_CLUSTER=1, fail) where namespaces cannot be built."""
    why = _why_not()
    if why is not None:
        if os.environ.get("SCALEDL_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"SCALEDL_REQUIRE_CLUSTER=1 but the emulated cluster tier cannot run: {why}")
        pytest.skip(f"emulated cluster tier: {why}")
    netns.remove_stale()  # namespaces of an earlier run that was killed before its finalizers


@pytest.fixture(scope="module")
def cluster(cluster_or_skip):
    """Four nodes, every link 100 Mbit/s each way; deleted after the module, also when a test fails."""
    c = netns.EmulatedCluster(NODES, rate=RATE)
    try:
        yield c
    finally:
        c.close()
