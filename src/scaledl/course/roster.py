"""A class roster for the LMS export (:mod:`scaledl.course.lms_export`): Canvas's gradebook export or a plain
CSV read into :class:`Student` rows, the exact keys that identify a person (ids, emails, a name in either order),
and :func:`match`, which finds a submission's student by those keys or says why it cannot.

>>> sorted(name_keys("Lovelace, Ada"))
['adalovelace', 'lovelaceada']
>>> norm_name("Zoë O'Brien-Smith")
'zoeobriensmith'
"""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass

from scaledl._args import UsageError

CANVAS_ROSTER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # Canvas's own cell, leading spaces included
PLAIN_ID = ("id", "student id", "student_id", "username", "user", "login", "login id", "user id")
PLAIN_NAME = ("name", "student", "student name", "full name")
PLAIN_EMAIL = ("email", "e-mail", "email address")
PLAIN_SID = ("sid", "student number", "sis id", "sis user id", "matriculation number")


def norm_id(value) -> str:
    return str(value or "").strip().casefold()


def norm_name(value) -> str:
    """A name without accents, case, spaces or punctuation: ``Zoë O'Brien`` is ``zoeobrien``."""
    plain = unicodedata.normalize("NFKD", str(value or ""))
    return "".join(ch for ch in plain.casefold() if ch.isalnum() and not unicodedata.combining(ch))


def name_keys(name: str) -> frozenset[str]:
    """A roster name in both orders: "Last, First" (Canvas's sortable name) or "First [Middle] Last"."""
    name = str(name or "").strip()
    if "," in name:
        last, first = (x.strip() for x in name.split(",", 1))
        return frozenset(k for k in (norm_name(first + last), norm_name(last + first)) if k)
    words = name.split()
    keys = {norm_name(name)}
    if len(words) > 1:
        keys.add(norm_name(words[-1] + "".join(words[:-1])))
    return frozenset(k for k in keys if k)


@dataclass(frozen=True)
class Keys:
    """What identifies a person: exact ids, emails and name keys (each normalised)."""

    ids: frozenset[str] = frozenset()
    emails: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    said: str = ""  # how the submission named them, for the report


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    cells: dict          # the roster's own cells (Canvas's identity columns), written back as they were
    plain_id: str        # roster-grades.csv's "student id"
    name: str
    keys: Keys


def _find_column(header: list[str], names) -> str | None:
    by = {h.strip().casefold(): h for h in header}
    return next((by[n] for n in names if n in by), None)


def _student_keys(ids, emails, name) -> Keys:
    ids = {norm_id(x) for x in ids if norm_id(x)}
    emails = {norm_id(x) for x in emails if "@" in str(x or "")}
    ids |= {e.split("@", 1)[0] for e in emails}
    return Keys(frozenset(ids), frozenset(emails), name_keys(name))


def read_canvas_roster(path) -> tuple[list[str], list[Student]]:
    """Canvas's gradebook export: its header and its students (the Points Possible row and rows without an ID,
    such as a "Manual Posting" row, left out).

    Raises:
        ValueError: not a Canvas export (no ``Student`` or ``ID`` column).
    """
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0]] if rows else []
    if "Student" not in header or "ID" not in header:
        raise UsageError(f"canvas={str(path)!r}: expected Canvas's gradebook export, whose header starts "
                         f"{', '.join(CANVAS_ROSTER)}; got {header[:6]}")
    students = []
    for row in rows[1:]:
        cells = dict(zip(header, row))
        if cells.get("Student", "").strip() == POINTS_POSSIBLE.strip() or not cells.get("ID", "").strip():
            continue
        keep = {c: cells.get(c, "") for c in CANVAS_ROSTER}
        login = cells.get("SIS Login ID", "")
        keys = _student_keys([cells.get("ID"), cells.get("SIS User ID"), login],
                             [login, cells.get("Email", "")], cells.get("Student", ""))
        plain = next((v.strip() for v in (cells.get("SIS User ID"), login, cells.get("ID")) if v and v.strip()), "")
        students.append(Student(keep, plain, cells.get("Student", "").strip(), keys))
    return header, students


def read_roster(path) -> list[Student]:
    """A plain roster CSV: an id column (``id``, ``student id``, ``username``, ``login``, ...), a name (``name``,
    or ``first name`` and ``last name``), and optionally ``email`` and a student number (``sid``, ``sis id``).

    Raises:
        ValueError: no id column.
    """
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    id_col = _find_column(header, PLAIN_ID)
    if id_col is None:
        raise UsageError(f"roster={str(path)!r}: expected a student id column (one of {', '.join(PLAIN_ID)}); "
                         f"got {header}")
    name_col, email_col, sid_col = (_find_column(header, n) for n in (PLAIN_NAME, PLAIN_EMAIL, PLAIN_SID))
    first, last = _find_column(header, ("first name", "given name")), _find_column(header, ("last name", "surname"))
    students = []
    for row in rows:
        sid = (row.get(id_col) or "").strip()
        if not sid:
            continue
        name = (row.get(name_col) or "").strip() if name_col else ""
        if not name and first and last:
            name = f"{(row.get(last) or '').strip()}, {(row.get(first) or '').strip()}".strip(", ")
        email = (row.get(email_col) or "") if email_col else ""
        keys = _student_keys([sid, row.get(sid_col) if sid_col else None], [email, sid], name)
        students.append(Student({"student id": sid, "name": name}, sid, name, keys))
    return students


def match(who: Keys, roster: list[Student]) -> tuple[Student | None, str, list[Student]]:
    """(the student, "", []) or (None, why, the candidates): ids first, then emails, then names; a key that
    matches several students is ambiguous and stops there."""
    for kind in ("ids", "emails", "names"):
        mine = getattr(who, kind)
        found = [s for s in roster if mine & getattr(s.keys, kind)] if mine else []
        if len(found) == 1:
            return found[0], "", []
        if found:
            return None, f"ambiguous: its {kind[:-1]} matches {len(found)} students", found
    return None, "unmatched: no student of the roster has its id, email or name", []
