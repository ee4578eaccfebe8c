"""Notebook files in the form JupyterLab writes back (integral floats as ints, ipykernel's kernelspec)."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from scaledl.book import nbfile


@pytest.mark.parametrize("value, expected", [
    (1.0, 1),                      # JSON.stringify(1.0) === "1"
    (-0.0, 0),                     # JSON.stringify(-0) === "0"
    (0.5, 0.5),
    (1e20, 100000000000000000000),  # still plain digits in JavaScript
    (1e21, 1e21),                  # exponent form from 1e21: parsed back as a float
    (-1e21, -1e21),
    (float("inf"), float("inf")),
    (True, True),                  # bools are not numbers here
    ("1.0", "1.0"),
])
def test_numbers_as_javascript_serialises_them(value, expected):
    got = nbfile.as_javascript_would(value)
    assert got == expected and type(got) is type(expected)


def test_nested_containers_are_converted():
    assert nbfile.as_javascript_would({"a": [1.0, {"b": 2.5, "c": 3.0}]}) == {"a": [1, {"b": 2.5, "c": 3}]}


def test_dumps_is_idempotent_and_sets_the_kernelspec(tmp_path):
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}, "x": {"max": 1.0, "step": 0.1}})
    nb.cells.append(new_code_cell("print('é')"))
    text = nbfile.dumps(nb)
    assert text.endswith("}\n") and "é" in text
    data = json.loads(text)
    assert data["metadata"]["kernelspec"] == nbfile.KERNELSPEC
    assert data["metadata"]["x"] == {"max": 1, "step": 0.1}
    assert nbfile.dumps(nbformat.reads(text, as_version=4)) == text
    path = tmp_path / "n.ipynb"
    nbfile.write(nb, path)
    assert path.read_text() == text and nbfile.problems(path) == []
    assert not list(tmp_path.glob("*.tmp"))


def test_problems_name_the_file_and_the_cause(tmp_path):
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    found = nbfile.problems(path, "chapters/n.ipynb")
    assert len(found) == 2 and all(p.startswith("chapters/n.ipynb: ") for p in found)


@pytest.mark.parametrize("metadata, expected", [
    # JupyterLab's shared cell model keeps the two keys in step when it loads a cell (setMetadata)
    ({"jupyter": {"outputs_hidden": True, "source_hidden": True}},
     {"collapsed": True, "jupyter": {"outputs_hidden": True, "source_hidden": True}}),
    ({"collapsed": True}, {"collapsed": True, "jupyter": {"outputs_hidden": True}}),
    ({"collapsed": False, "jupyter": {"outputs_hidden": True}},  # collapsed wins
     {"collapsed": False, "jupyter": {"outputs_hidden": False}}),
    ({"jupyter": {"source_hidden": True}}, {"jupyter": {"source_hidden": True}}),  # input only: nothing to sync
    ({"tags": ["x"]}, {"tags": ["x"]}),
])
def test_collapsed_outputs_are_said_both_ways_as_jupyterlab_loads_them(tmp_path, metadata, expected):
    nb = new_notebook(metadata={"kernelspec": dict(nbfile.KERNELSPEC)})
    nb.cells.append(new_code_cell("print(1)", metadata=metadata))
    assert json.loads(nbfile.dumps(nb))["cells"][0]["metadata"] == expected
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    out_of_step = metadata != expected
    assert bool(nbfile.problems(path)) == out_of_step  # what JupyterLab would rewrite on open
    if out_of_step:
        assert "'collapsed' out of step" in nbfile.problems(path)[0]
