"""Notebook files written exactly as JupyterLab writes them back, so opening one never changes it.

JupyterLab keeps a notebook as a JavaScript object; saving sends ``JSON.stringify`` of it to the Jupyter
server, which re-parses it and writes it with nbformat. Two things change on the way if the file was not
already in that form:

* JavaScript has one number type, so an integral float (``1.0``, e.g. a slider's ``max`` in the stored
  widget state) comes back as the integer ``1``; ``JSON.stringify`` switches to exponent notation only at
  1e21, so that is where the conversion stops.
* When the kernel starts, JupyterLab writes the kernel's own spec into the metadata: the ipykernel spec's
  display name is "Python 3 (ipykernel)".
* A cell's two ways of saying its outputs are collapsed, nbformat's older ``collapsed`` and
  ``jupyter.outputs_hidden``, are kept in step when JupyterLab loads the cell (its shared model's
  ``setMetadata``): where only one is set, the other is added with its value (``collapsed`` wins when both are).

:func:`write` applies all three before nbformat serialises (indent 1, sorted keys, non-ASCII kept, a final
newline: nbformat's own settings, which the server uses too). ``tests/browser`` opens every notebook in
JupyterLab in Chromium, saves it, and checks the bytes did not change; :func:`problems` is the static
check that ``scaledl book check`` runs without a browser.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_JS_EXPONENT_FROM = 1e21  # JSON.stringify writes 1e21 and above (and their negatives) in exponent form


def as_javascript_would(obj):
    """``obj`` after a JSON round trip through JavaScript: integral floats below 1e21 become ints."""
    if isinstance(obj, float):
        if obj.is_integer() and abs(obj) < _JS_EXPONENT_FROM:
            return int(obj)
        return obj
    if isinstance(obj, dict):
        return {k: as_javascript_would(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_javascript_would(v) for v in obj]
    return obj


def collapsed_in_step(metadata: dict) -> dict:
    """A cell's ``metadata`` with ``collapsed`` and ``jupyter.outputs_hidden`` in step, as JupyterLab loads it.

    >>> collapsed_in_step({"jupyter": {"outputs_hidden": True}})
    {'jupyter': {'outputs_hidden': True}, 'collapsed': True}
    """
    metadata = dict(metadata)
    jupyter = metadata.get("jupyter")
    if metadata.get("collapsed") is not None:
        metadata["jupyter"] = {**(jupyter or {}), "outputs_hidden": metadata["collapsed"]}
    elif isinstance(jupyter, dict) and jupyter.get("outputs_hidden") is not None:
        metadata["collapsed"] = jupyter["outputs_hidden"]
    return metadata


def normalise(nb):
    """A copy of ``nb`` in the form JupyterLab saves: ipykernel's kernelspec, numbers as JavaScript has them,
    each cell's collapsed outputs said both ways."""
    nb = nbformat.from_dict(as_javascript_would(json.loads(json.dumps(nb))))
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for cell in nb.cells:
        if "metadata" in cell:
            cell.metadata = nbformat.from_dict(collapsed_in_step(cell.metadata))
    return nb


def dumps(nb) -> str:
    """The file's text: nbformat's serialisation of :func:`normalise` (nb), with its final newline."""
    text = nbformat.writes(normalise(nb))
    return text if text.endswith("\n") else text + "\n"


def write(nb, path: Path) -> None:
    """Write ``nb`` to ``path`` atomically (a temporary file, then a rename) in JupyterLab's form."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps(nb), encoding="utf-8")
    tmp.replace(path)


def problems(path: Path, name: str | None = None) -> list[str]:
    """Ways in which JupyterLab would rewrite the file at ``path`` when it is opened and saved unchanged."""
    name = name or str(path)
    text = Path(path).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    found = []
    spec = dict(nb.metadata.get("kernelspec", {}))
    if spec != KERNELSPEC:
        found.append(f"{name}: kernelspec is {spec!r}; JupyterLab writes {KERNELSPEC!r} when its kernel "
                     f"starts (re-execute with `scaledl book execute`)")
    if dumps(nb) != text:
        found.append(f"{name}: not in the form JupyterLab saves (integral floats such as 1.0, formatting, "
                     f"'collapsed' out of step with 'jupyter.outputs_hidden'); "
                     f"opening it would mark it modified (re-execute with `scaledl book execute`)")
    return found
