"""What the dependency-drift probes share (tests/unit/test_dependency_drift.py, tests/sim/test_simulator_drift.py):
a digest of exact bits, the installed release, and the named failure."""

from __future__ import annotations

import hashlib
import importlib.metadata

import numpy as np
import pytest


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()[:16]


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def check_known(dist: str, what: str, got: str, sample, affects: str, known: dict[str, str], *, where: str) -> None:
    """Fail, naming the release, the behaviour and the chapters, when ``got`` is none of the ``known`` digests."""
    if got not in known.values():
        pytest.fail(f"{dist} {version(dist)} changed a behaviour the book relies on: {what} gives digest {got} "
                    f"(sample {sample}), which no known release gave (known: {known}). Results the book prints "
                    f"from it: {affects}. Re-execute those notebooks (scaledl book execute ...), check that the diff "
                    f"is what the release notes explain, fix what the book says, and add the digest to {where} "
                    f"under the release's name.", pytrace=False)
