"""Read and validate ``book.toml``, the book's table of contents, and resolve names given on the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError

STATUSES = ("planned", "draft", "done")
KINDS = ("chapter", "lab")
ROOT_VAR = "SCALEDL_BOOK_ROOT"


@dataclass(frozen=True)
class Entry:
    """One chapter or lab of the book."""

    kind: str  # "chapter" or "lab"
    id: str
    file: str  # relative to the book root; for a lab, the student version
    title: str
    status: str
    part: str
    seeds: tuple[str, ...] = ()
    gpu: bool = False
    sim_budget_s: float = 60.0
    solution: str | None = None  # labs only
    trains: bool = False  # trains networks: re-executed as another CPU would (tests/notebooks/test_emulated_cpu.py)
    # The reader's journey (scaledl.book.journey makes each notebook's opening and closing cells from these):
    teaches: str | None = None  # one sentence: what the reader learns
    assumes: tuple[str, ...] = ()  # ids of earlier entries the notebook builds on
    cpu_seconds: float | None = None  # measured whole-notebook time on the simulator backend
    gpu_minutes: float | None = None  # measured on a GPU; None: not measured yet
    practises: tuple[str, ...] = ()  # labs only: the chapters it practises (default: every chapter of its part)

    @property
    def executed_file(self) -> str:
        """The notebook that is executed and validated: a lab's solution, a chapter itself."""
        return self.solution if self.solution else self.file

    @property
    def validated(self) -> bool:
        return self.status != "planned"


@dataclass(frozen=True)
class Book:
    root: Path
    title: str
    authors: tuple[str, ...]
    license: str
    repository: str
    parts: tuple[tuple[str, str], ...]  # (id, title)
    entries: tuple[Entry, ...] = field(default=())

    @property
    def journey(self) -> bool:
        """True when book.toml describes the reader's journey (entries carry ``teaches``): then every written
        notebook opens with a ``book-intro`` cell and ends with a ``book-nav`` cell (scaledl.book.journey)."""
        return any(e.teaches is not None for e in self.entries)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def resolve(self, name: str) -> Entry:
        """Find an entry by id (``01``, ``1``, ``lab02``), file stem, or path.

        Raises:
            ValueError: no entry matches, with the list of valid names.
        """
        wanted = name.strip()
        for e in self.entries:
            candidates = {e.id, Path(e.file).stem, e.file}
            if e.solution:
                candidates |= {Path(e.solution).stem, e.solution}
            if wanted in candidates or str(Path(wanted)) in candidates:
                return e
            if wanted.isdigit() and e.kind == "chapter" and e.id.isdigit() and int(wanted) == int(e.id):
                return e
            if wanted.lower().startswith("lab") and e.kind == "lab":
                digits = wanted[3:].lstrip("_ ")
                if digits.isdigit() and int(digits) == int(e.id[3:]):
                    return e
        known = ", ".join(e.id for e in self.entries)
        raise UsageError(f"unknown notebook {name!r}: expected a chapter or lab id from book.toml ({known}), "
                         f"a file name or a path")


def find_root(start: Path | None = None) -> Path:
    """The folder holding ``book.toml``: ``$SCALEDL_BOOK_ROOT``, else the nearest one above ``start`` (or the
    current directory), else the checkout this package was installed from in editable mode."""
    if os.environ.get(ROOT_VAR):
        root = Path(os.environ[ROOT_VAR])
        if not (root / "book.toml").is_file():
            raise FileNotFoundError(f"{ROOT_VAR}={root} holds no book.toml")
        return root
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "book.toml").is_file():
            return folder
    package_checkout = Path(__file__).resolve().parents[3]
    if (package_checkout / "book.toml").is_file():
        return package_checkout
    raise FileNotFoundError(
        f"no book.toml in {here} or above it; run from inside the book's folder or set {ROOT_VAR}"
    )


def _require(table: dict, key: str, typ, where: str):
    if key not in table:
        raise UsageError(f"book.toml: {where} has no {key!r}")
    value = table[key]
    if not isinstance(value, typ):
        raise UsageError(f"book.toml: {where} {key} = {value!r} should be a {typ.__name__}")
    return value


def _id_list(raw: dict, key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"book.toml: {where} {key} = {value!r}; expected a list of entry ids such as [\"03\", "
                         f"\"lab01\"]")
    return tuple(value)


def _journey_fields(raw: dict, kind: str, where: str) -> dict:
    """The reader's-journey fields of one entry, type-checked (cross-references are checked later)."""
    fields: dict = {"assumes": _id_list(raw, "assumes", where)}
    if "practises" in raw:
        if kind != "lab":
            raise UsageError(f"book.toml: {where} has 'practises', which only a lab may have (the chapters it "
                             f"practises)")
        fields["practises"] = _id_list(raw, "practises", where)
    if "teaches" in raw:
        teaches = raw["teaches"]
        if not isinstance(teaches, str) or not teaches.strip() or not teaches.rstrip().endswith("."):
            raise UsageError(f"book.toml: {where} teaches = {teaches!r}; expected one sentence, ending with '.'")
        fields["teaches"] = " ".join(teaches.split())
    if "cpu_minutes" in raw:
        raise UsageError(f"book.toml: {where} has 'cpu_minutes', which 'cpu_seconds' replaced: give the seconds "
                         f"`scaledl book execute {raw.get('id', '')}` measured (it prints \"executed in N s\")")
    for key, what in (("cpu_seconds", "seconds > 0 (measured on the simulator backend)"),
                      ("gpu_minutes", "minutes > 0 (measured on a GPU; leave it out until measured)")):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise UsageError(f"book.toml: {where} {key} = {value!r}; expected {what}")
            fields[key] = value
    return fields


def _check_journey(entries: list[Entry]) -> None:
    """Cross-checks of the journey fields: ids exist, point backwards, and, once any entry says what it
    teaches, every written entry does and has its CPU time."""
    order = {e.id: i for i, e in enumerate(entries)}
    kinds = {e.id: e.kind for e in entries}
    journey = any(e.teaches is not None for e in entries)
    for i, e in enumerate(entries):
        where = f"{e.kind} {e.id}"
        for key in ("assumes", "practises"):
            for ref in getattr(e, key):
                if ref not in order:
                    raise UsageError(f"book.toml: {where} {key} {ref!r}, which is no entry's id "
                                     f"(known: {', '.join(order)})")
                if order[ref] >= i:
                    raise UsageError(f"book.toml: {where} {key} {ref!r}, which comes at or after it in reading "
                                     f"order; list only earlier entries")
                if key == "practises" and kinds[ref] != "chapter":
                    raise UsageError(f"book.toml: {where} practises {ref!r}, which is a lab; expected chapter ids")
        if journey and e.validated:
            for key in ("teaches", "cpu_seconds"):
                if getattr(e, key) is None:
                    raise UsageError(f"book.toml: {where} has no {key!r}; once any entry has 'teaches', every "
                                     f"written entry needs 'teaches' and 'cpu_seconds' (its opening cell is "
                                     f"made from them)")


def load(root: Path | None = None) -> Book:
    """Parse and validate ``book.toml``.

    Raises:
        ValueError: a missing or mistyped field, an unknown status, or a duplicated id or file.
    """
    import tomllib  # here, not at the top: Python 3.10 has no tomllib, and grading (scaledl.course.gradescope)
    #                 imports this module there without reading a book.toml

    root = Path(root) if root is not None else find_root()
    with open(root / "book.toml", "rb") as f:
        data = tomllib.load(f)
    meta = _require(data, "book", dict, "the file")
    parts, entries = [], []
    for p in _require(data, "parts", list, "the file"):
        pid = _require(p, "id", str, "a part")
        parts.append((pid, _require(p, "title", str, f"part {pid}")))
        for kind, key in (("chapter", "chapters"), ("lab", "labs")):
            for raw in p.get(key, []):
                eid = _require(raw, "id", str, f"a {kind} of part {pid}")
                where = f"{kind} {eid}"
                status = _require(raw, "status", str, where)
                if status not in STATUSES:
                    raise UsageError(f"book.toml: {where} status = {status!r}; expected one of {STATUSES}")
                budget = raw.get("sim_budget_s", 60)
                if not isinstance(budget, (int, float)) or budget <= 0:
                    raise UsageError(f"book.toml: {where} sim_budget_s = {budget!r}; expected seconds > 0")
                solution = raw.get("solution")
                if kind == "lab" and not isinstance(solution, str):
                    raise UsageError(f"book.toml: {where} needs a 'solution' notebook path")
                entries.append(Entry(
                    kind=kind, id=eid, file=_require(raw, "file", str, where),
                    title=_require(raw, "title", str, where), status=status, part=pid,
                    seeds=tuple(raw.get("seeds", [])), gpu=bool(raw.get("gpu", False)),
                    sim_budget_s=float(budget), solution=solution, trains=bool(raw.get("trains", False)),
                    **_journey_fields(raw, kind, where),
                ))
    _check_journey(entries)
    seen: dict[str, str] = {}
    for e in entries:
        for name in (e.id, e.file, *( [e.solution] if e.solution else [])):
            if name in seen:
                raise UsageError(f"book.toml: {name!r} is used by both {seen[name]} and {e.kind} {e.id}")
            seen[name] = f"{e.kind} {e.id}"
    return Book(
        root=root, title=_require(meta, "title", str, "[book]"),
        authors=tuple(_require(meta, "authors", list, "[book]")),
        license=_require(meta, "license", str, "[book]"),
        repository=_require(meta, "repository", str, "[book]"),
        parts=tuple(parts), entries=tuple(entries),
    )


STATUS_WORDS = {"planned": "planned (not written yet)", "draft": "draft", "done": "done"}
README_START, README_END = "<!-- book.toml table: start -->", "<!-- book.toml table: end -->"


def status_table(book: Book) -> str:
    """The table of contents as a Markdown table with each entry's status, for the README."""
    parts = dict(book.parts)
    rows = ["| Part | | Title | Status | GPU |", "| --- | --- | --- | --- | --- |"]
    for e in book.entries:
        label = f"Chapter {e.id}" if e.kind == "chapter" else f"Lab {e.id[3:]}"
        title = f"[{e.title}]({e.file})" if e.validated else e.title
        rows.append(f"| {e.part} {parts[e.part]} | {label} | {title} | {STATUS_WORDS[e.status]} | "
                    f"{'recommended' if e.gpu else 'not needed'} |")
    return "\n".join(rows)


def update_readme(book: Book) -> bool:
    """Rewrite the README's table between its markers from book.toml; True if the file changed.

    Raises:
        ValueError: the README lacks the markers.
    """
    path = book.root / "README.md"
    text = path.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise UsageError(f"{path.name}: expected the markers {README_START!r} and {README_END!r}")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{status_table(book)}\n{README_END}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text
