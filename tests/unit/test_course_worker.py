"""Processes the book starts many times (the scaledl command) skip jsonschema's slow IRI parsers
(scaledl._startup) and still validate notebooks; the grading runner, started once per group of tasks per
student, does not import nbformat at all (it reads and writes its notebook as plain JSON)."""

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


def test_startup_skips_the_iri_parsers_and_notebooks_are_still_validated():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "None", f"rfc3987_syntax was imported: {lines}"
    assert lines[-1] == "invalid notebook rejected"


def test_the_command_loads_it_first_and_the_runner_needs_no_nbformat():
    from pathlib import Path

    import scaledl

    src = Path(scaledl.__file__).parent
    assert (src / "__main__.py").read_text().startswith("from scaledl import _startup")
    out = subprocess.run([sys.executable, "-c", "import sys, scaledl.course.runner as r; r._shell(); "
                          "print(sorted(m for m in ('nbformat', 'jsonschema', 'nbclient') if m in sys.modules))"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr)
