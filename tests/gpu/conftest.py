import pytest

import scaledl


def pytest_collection_modifyitems(config, items):
    if scaledl.backend() == "cuda":
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU; this process runs the simulator ({scaledl.device.reason()})")
    for item in items:
        if "tests/gpu/" in item.nodeid.replace("\\", "/"):
            item.add_marker(skip)
