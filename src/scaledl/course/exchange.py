"""Results as data: what a hidden-test cell hands the grader, and what the grader hands it, on disk.

A graded notebook runs as the student, so nothing it leaves behind is trusted: it is read back here as plain
data only. Arrays go into ``STEM.npz`` (NumPy's format, read with ``allow_pickle=False``), everything else into
``STEM.json`` (numbers, strings, booleans, None, and lists and dicts of them). Both files are size-checked before
they are parsed, members of the ``.npz`` zip included, so a crafted archive cannot unpack to more than the cap.

>>> import tempfile, numpy as np
>>> d = tempfile.mkdtemp()
>>> save(f"{d}/t", {"x": np.arange(3, dtype=np.float32), "n": 7, "tag": "ok"})
>>> got = load(f"{d}/t")
>>> got["x"].dtype, got["x"].tolist(), got["n"], got["tag"]
(dtype('float32'), [0.0, 1.0, 2.0], 7, 'ok')
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np

from scaledl._args import UsageError

MAX_BYTES = 64 << 20  # per task and direction: the largest hidden test hands over a few MB


def _plain(name: str, value):
    """``value`` as JSON-able Python (NumPy scalars unwrapped), or TypeError naming ``name``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(f"{name}.{k}", v) for k, v in value.items()}
    raise TypeError(f"{name}: a {type(value).__name__} cannot be handed to the grader; expected an array, "
                    f"a number, a string, or a list or dict of those")


def _split(data: dict) -> tuple[dict, dict]:
    """``data``'s arrays and its plain values, checked."""
    if not isinstance(data, dict):
        raise TypeError(f"results: a {type(data).__name__}; expected a dict of named results")
    arrays, rest = {}, {}
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError(f"key {key!r}: expected a string")
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise TypeError(f"{key}: an object array cannot be handed to the grader; expected numbers")
            arrays[key] = value
        else:
            rest[key] = _plain(key, value)
    return arrays, rest


def save(stem, data: dict) -> None:
    """Write ``data`` (str keys) to ``stem.npz`` (arrays) and ``stem.json`` (the rest).

    Raises:
        TypeError: a key is not a string, or a value is neither an array nor plain data.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    arrays, rest = _split(data)
    with open(stem.with_suffix(".npz"), "wb") as f:
        np.savez(f, **arrays)
    stem.with_suffix(".json").write_text(json.dumps(rest), encoding="utf-8")


def load(stem, *, max_bytes: int = MAX_BYTES) -> dict:
    """Read what :func:`save` wrote, as data only; a file that is missing reads as empty.

    Raises:
        ValueError: the files hold more than ``max_bytes``, or are not what :func:`save` writes.
    """
    stem, out = Path(stem), {}
    npz, js = stem.with_suffix(".npz"), stem.with_suffix(".json")
    total = 0
    if npz.is_file():
        total += os.path.getsize(npz)
        with zipfile.ZipFile(npz) as z:  # the unpacked size, before anything is unpacked
            total += sum(i.file_size for i in z.infolist())
        if total > 2 * max_bytes:
            raise UsageError(f"{npz.name}: {total} bytes unpacked; expected at most {max_bytes}")
        with np.load(npz, allow_pickle=False) as f:
            for key in f.files:
                out[key] = f[key]
    if js.is_file():
        size = os.path.getsize(js)
        if size > max_bytes:
            raise UsageError(f"{js.name}: {size} bytes; expected at most {max_bytes}")
        data = json.loads(js.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise UsageError(f"{js.name}: expected a JSON object")
        out.update(data)
    return out


def pack(data: dict) -> dict:
    """``data`` as one JSON-able object for a pipe: the arrays as base64 of the ``.npz`` :func:`save` writes, the
    rest as the same plain JSON.

    Raises:
        TypeError: as :func:`save`.
    """
    import base64
    import io

    arrays, rest = _split(data)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return {"npz": base64.b64encode(buf.getvalue()).decode("ascii"), "json": rest}


def unpack(obj, *, max_bytes: int = MAX_BYTES) -> dict:
    """What :func:`pack` made, read back as data only (no pickle), within ``max_bytes`` each way.

    Raises:
        ValueError: anything else, or more than ``max_bytes`` (the archive's unpacked size counted before it
            is unpacked).
    """
    import base64
    import binascii
    import io

    if not isinstance(obj, dict) or set(obj) != {"npz", "json"} or not isinstance(obj["json"], dict) \
            or not isinstance(obj["npz"], str):
        raise UsageError("expected what exchange.pack makes: an object with 'npz' and 'json'")
    if len(obj["npz"]) > 2 * max_bytes or len(json.dumps(obj["json"])) > max_bytes:
        raise UsageError(f"more than {max_bytes} bytes handed over")
    try:
        raw = base64.b64decode(obj["npz"], validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("npz: not base64") from None
    out = {}
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            if sum(i.file_size for i in z.infolist()) > 2 * max_bytes:
                raise UsageError(f"npz: more than {max_bytes} bytes unpacked")
        with np.load(io.BytesIO(raw), allow_pickle=False) as f:
            for key in f.files:
                out[key] = f[key]
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise UsageError(f"npz: not an archive of arrays ({type(err).__name__})") from None
    for key, value in obj["json"].items():
        out[key] = _plain(key, value)
    return out


def roundtrip(data: dict) -> dict:
    """``data`` as it reads back after :func:`save` and :func:`load` (so a solution's self-check sees the
    same types the grader will)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        save(Path(d) / "x", data)
        return load(Path(d) / "x")


def finite(x) -> bool:
    """True for a real number that is neither NaN nor infinite (a judge's guard on a hostile result)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
