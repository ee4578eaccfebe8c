"""Processes the book starts many times (the grading worker, once per student; the scaledl command) skip
jsonschema's slow IRI parsers (scaledl._startup) and still validate notebooks."""

import subprocess
import sys

CODE = """
import sys
from scaledl import _startup
import jsonschema, nbclient, nbformat
print(sys.modules.get("rfc3987_syntax", "absent"))
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
nbformat.validate(nb)
bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
bad.cells[0]["cell_type"] = "nonsense"
try:
    nbformat.validate(bad)
except nbformat.ValidationError:
    print("invalid notebook rejected")
"""


def test_the_worker_skips_the_iri_parsers_and_still_validates_notebooks():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "None", f"rfc3987_syntax was imported: {lines}"
    assert lines[-1] == "invalid notebook rejected"


def test_the_worker_and_the_command_load_it_before_nbformat():
    from pathlib import Path

    import scaledl

    src = Path(scaledl.__file__).parent
    worker = (src / "course" / "worker.py").read_text()
    assert worker.index("from scaledl import _startup") < worker.index("import nbformat")
    assert (src / "__main__.py").read_text().startswith("from scaledl import _startup")
