"""Running a course on the book: a student release without solutions (release), what a student bundle is and
how its ``book check`` works (bundle), the scan that proves nothing secret leaked (leaks).

``scaledl course release OUT/`` writes the bundle; ``docs/instructor-guide.md`` says how to use it.
"""
