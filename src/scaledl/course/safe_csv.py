"""CSV files the course tools write, safe to open in a spreadsheet: no cell starts a formula.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and
some skip a leading tab or carriage return first. Cells of ``grades.csv`` and of the LMS exports hold text that
students chose (a file name such as ``@SUM(1+1)*cmd|' /C calc'!A0.ipynb``, a name in a roster), so each such
cell is written with a leading apostrophe (OWASP's advice for CSV injection): a spreadsheet shows it as text.
A plain number (``-2``, ``3.5``) is left alone: it is not a formula, and a grade column must stay numeric.

Every CSV that :mod:`scaledl.course` writes goes through :func:`writer`.

>>> cell("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
>>> [cell(v) for v in ("-3", "3.5", "+1", "@a", "ada", None)]
['-3', '3.5', "'+1", "'@a", 'ada', '']
>>> uncell(cell("@a")), uncell("'quoted")
('@a', "'quoted")
"""

from __future__ import annotations

import csv
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"-?\d+(\.\d+)?\Z")


def cell(value) -> str:
    """``value`` as CSV text that no spreadsheet reads as a formula (None is an empty cell)."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_START) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def uncell(text: str) -> str:
    """A cell :func:`cell` wrote, read back (as ``scaledl course export`` reads grades.csv): the apostrophe
    before a formula-like text removed."""
    text = str(text)
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


class SafeWriter:
    """A ``csv.writer`` whose every cell goes through :func:`cell`."""

    def __init__(self, f, **kwargs):
        self._writer = csv.writer(f, **kwargs)

    def writerow(self, row) -> None:
        self._writer.writerow([cell(v) for v in row])

    def writerows(self, rows) -> None:
        for row in rows:
            self.writerow(row)


def writer(f, **kwargs) -> SafeWriter:
    """``csv.writer(f, **kwargs)``, with formula-like cells escaped."""
    return SafeWriter(f, **kwargs)
