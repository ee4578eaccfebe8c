"""Reading a cell's source as Python: IPython magic, shell and help lines are blanked to ``pass`` (keeping line
numbers) so the rest still parses, and those that reach a shell, another file or a debugger are noted with
why; a cell that still does not parse yields no tree."""

from __future__ import annotations

import ast
import re

# Cell magics whose body is Python (checked like any code); line magics followed by Python.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}
PYTHON_LINE_MAGICS = {"time", "timeit", "prun"}
# Magics that run a shell, another file or a debugger.
SHELL_MAGICS = {"system", "sx", "sc", "bash", "sh", "script", "writefile", "run", "load", "load_ext",
                "reload_ext", "python", "python2", "python3", "perl", "ruby", "pypy", "debug", "pdb", "alias"}
FAIR_EXTENSIONS = {"autoreload", "line_profiler", "memory_profiler"}
# Shell lines as common in notebooks as %pip (which installs just as much): one command, no shell operators.
FAIR_SHELL = re.compile(r"^(pip|pip3|conda|nvidia-smi|nvcc|ls|pwd)(\s[^;&|`$<>\n]*)?$")


def _blank_magics(source: str) -> tuple[str, list[tuple[int, str]]]:
    """``source`` with IPython magic, shell and help lines replaced by ``pass`` (line numbers kept), and the
    lines of those that reach a shell or another file, with why."""
    lines, flags = source.split("\n"), []
    first = next((i for i, s in enumerate(lines) if s.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = (lines[first].lstrip()[2:].split() or [""])[0]
        if name not in PYTHON_CELL_MAGICS:
            if name in SHELL_MAGICS:
                flags.append((first + 1, f"cell magic %%{name}"))
            return "", flags
        lines[first] = ""
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        assigned = re.match(r"^[\w.,\s()]+=\s*([!%].*)$", stripped)
        magic = assigned.group(1) if assigned else stripped
        if magic.startswith("!"):
            if not FAIR_SHELL.match(magic[1:].strip()):
                flags.append((i + 1, "runs a shell command"))
        elif magic.startswith("%"):
            name = (magic.lstrip("%").split() or [""])[0]
            rest = magic.lstrip("%")[len(name):]
            if not assigned and name in PYTHON_LINE_MAGICS and rest.strip() and not rest.strip().startswith("-"):
                lines[i] = indent + rest.strip()   # the timed statement is Python
                continue
            if name in SHELL_MAGICS and not (name == "load_ext" and rest.strip() in FAIR_EXTENSIONS):
                flags.append((i + 1, f"magic %{name}"))
        elif not re.match(r"^\?|^[\w.]+\?\??$", stripped):
            continue
        lines[i] = indent + "pass"
    return "\n".join(lines), flags


def _parse(source: str):
    """(tree or None, magic flags) for one cell's source."""
    try:
        return ast.parse(source), []
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        pass
    text, flags = _blank_magics(source)
    try:
        return ast.parse(text), flags
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, flags
