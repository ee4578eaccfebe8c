"""Link the chapters' prose citations to the bibliography page of the static book.

The chapters cite in prose ("Williams, Waterman and Patterson, 2009" or "*Scaling Deep Learning*, Baidu
SVAIL, about 2016"), not with keys. :class:`Citations` finds, in a markdown cell, the works of
``references.bib`` it names, and appends a line of ``{cite:p}`` roles (sphinxcontrib-bibtex) that link each
to its entry on the bibliography page. A work is recognised by

* its title (braces and case ignored), when its year also occurs in the same cell; or
* its first author's surname followed, within one sentence-sized window, by its year, when that surname and
  year name one work only (a person, not an organisation such as ``{NVIDIA}``): "Williams, Waterman and
  Patterson, 2009", "Narayanan et al., SOSP 2019", "Patarasuk and Yuan (JPDC 2009)".

The prose itself is left as written: a reader sees the citation as the author wrote it, and a link after it.
The bib file is parsed with pybtex (sphinxcontrib-bibtex's own parser).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from scaledl._args import UsageError

WINDOW_CHARS = 80  # the most characters between an author's surname and the year in one citation
CITED_PREFIX = "Cited here:"


def _names(surname: str, year: str) -> re.Pattern:
    """A surname, then its year within one citation: "Surname, 2009", "Surname and Other, 2009",
    "Surname et al., Venue 2019", "Surname and Other (Venue 2009)". A full stop (other than the one of
    "et al."), a semicolon, a closing parenthesis or a line break ends the citation first."""
    gap = rf"[^.;()\n]{{0,{WINDOW_CHARS}}}?"
    return re.compile(rf"\b{re.escape(surname)}\b(?:\s+et\s+al\.)?{gap}(?:\({gap})?\b{year}\b")


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


@dataclass(frozen=True)
class Work:
    key: str
    title: str  # braces removed
    year: str
    surname: str | None  # the first author's, None for an organisation or a missing author


class Citations:
    """The works of a bib file and how to recognise them in prose.

    >>> bib = '@article{williams2009roofline, author = {Williams, Samuel and Patterson, David},' \\
    ...       ' title = {Roofline: An Insightful Visual Performance Model}, year = {2009}}'
    >>> c = Citations.from_bib(bib)
    >>> c.keys_in("the roofline (Williams, Waterman and Patterson, 2009) bounds")
    ['williams2009roofline']
    >>> c.link("No citation here.")
    'No citation here.'
    """

    def __init__(self, works: list[Work]):
        self.works = works
        by_name = defaultdict(list)
        for w in works:
            if w.surname:
                by_name[(w.surname, w.year)].append(w.key)
        self._unique = {k: v[0] for k, v in by_name.items() if len(v) == 1}

    @classmethod
    def from_bib(cls, text: str) -> Citations:
        """Parse bib source text.

        Raises:
            ValueError: the text is not valid BibTeX (pybtex's message).
        """
        from pybtex.database import parse_string
        from pybtex.scanner import PybtexError

        try:
            data = parse_string(text, "bibtex")
        except PybtexError as err:
            raise UsageError(f"references.bib: {err}") from None
        works = []
        for key, entry in data.entries.items():
            people = entry.persons.get("author", [])
            surname = None
            if people and people[0].last_names:
                last = _plain(" ".join(people[0].last_names))
                # "{NVIDIA}" parses as one braced last name with no first name: an organisation
                if people[0].first_names or people[0].middle_names:
                    surname = last
            works.append(Work(key=key, title=_plain(entry.fields.get("title", "")),
                              year=_plain(entry.fields.get("year", "")), surname=surname))
        return cls(works)

    def keys_in(self, text: str) -> list[str]:
        """The keys of the works ``text`` cites, in the order of the bib file."""
        flat = _plain(text)
        low = flat.lower()
        found = set()
        for w in self.works:
            if not w.year:
                continue
            if len(w.title.split()) >= 2 and w.title.lower() in low and re.search(rf"\b{w.year}\b", flat):
                found.add(w.key)
        for (surname, year), key in self._unique.items():
            if _names(surname, year).search(flat):
                found.add(key)
        return [w.key for w in self.works if w.key in found]

    def link(self, source: str) -> str:
        """``source`` with a line of citation roles appended for the works it cites (unchanged if none)."""
        keys = self.keys_in(source)
        if not keys:
            return source
        return f"{source.rstrip()}\n\n{CITED_PREFIX} {{cite:p}}`{','.join(keys)}`"
