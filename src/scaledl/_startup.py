"""Start-up cost of the processes the book starts many times (the grader's worker, once per student; the
``scaledl`` command; the test suite's own processes).

jsonschema, which nbformat imports, imports ``rfc3987_syntax`` when it is installed (the ``format-nongpl``
extra that Jupyter's packages ask for), and that module builds some 40 Earley parsers for the "iri" string
formats at import: about a second of CPU per process (python-jsonschema/jsonschema issue #1428), for formats
that no notebook schema uses. Marking the module absent before nbformat is imported makes jsonschema leave
those two formats unchecked; every other check is unchanged.

Importing this module applies it, so it also works as a pytest plugin (``-p scaledl._startup``).
"""

import sys


def skip_iri_format_checkers() -> None:
    """Make ``import rfc3987_syntax`` fail in this process (a no-op once it has been imported)."""
    sys.modules.setdefault("rfc3987_syntax", None)


skip_iri_format_checkers()
