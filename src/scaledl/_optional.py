"""Optional packages: the package's base install leaves out what only some readers need, and says which extra
brings it back, and how to install it (the book is not on PyPI: :func:`install_command`).

The runtime install carries what the chapters import. MPI (chapter 14's measurements, lab 05), JupyterLab
and the notebook tools (``scaledl book ...``) and the course tools are extras; code that needs one calls
:func:`require`, or lets :func:`explain` turn the bare ``ModuleNotFoundError`` into a sentence.

>>> EXTRAS["mpi4py"], EXTRAS["nbformat"]
('mpi', 'lab')
>>> print(install_command("mpi"))
pip install -e ".[mpi]" in a checkout of the book, or pip install "scaledl[mpi] @ git+<the book's repository>"
>>> require("json").__name__
'json'
"""

from __future__ import annotations

import importlib

# The top-level module an extra provides -> the extra (pyproject.toml [project.optional-dependencies]).
EXTRAS = {"mpi4py": "mpi", "nbformat": "lab", "nbclient": "lab", "nbconvert": "lab", "jupyterlab": "lab",
          "ipykernel": "lab", "nbgrader": "course", "markdown_it": "course"}


def install_command(extra: str) -> str:
    """How to add the package's ``extra``, as a sentence. ``scaledl`` is not on PyPI, so not from an index:
    from a checkout, or from the book's git repository (what the setup cells install from), with the extra."""
    return (f'pip install -e ".[{extra}]" in a checkout of the book, '
            f'or pip install "scaledl[{extra}] @ git+<the book\'s repository>"')


def message(module: str, purpose: str = "this") -> str:
    """The sentence for a missing optional ``module``: what needs it and the pip command that installs it."""
    top = module.split(".")[0]
    extra = EXTRAS.get(top)
    how = install_command(extra) if extra else f"pip install {top}"
    return f"{purpose} needs {top}, which the package's base install leaves out; install it with: {how}"


def require(module: str, purpose: str = "this"):
    """Import and return ``module``.

    Raises:
        ModuleNotFoundError: the module (or its package) is missing; the message names the extra to install.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] != module.split(".")[0]:
            raise  # something the optional package itself imports is broken: its own message says more
        raise ModuleNotFoundError(message(module, purpose), name=err.name) from None


def explain(err: ModuleNotFoundError, purpose: str = "this") -> str | None:
    """:func:`message` for ``err`` when it is about an optional package, else None."""
    top = (err.name or "").split(".")[0]
    return message(top, purpose) if top in EXTRAS else None
