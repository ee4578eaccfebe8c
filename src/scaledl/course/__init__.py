"""Running a course on the book: a student release without solutions (release), what a student bundle is and
how its ``book check`` works (bundle), the scan that proves nothing secret leaked (leaks), the instructor
guide's generated tables (guide), and grading submitted labs with hidden tests (grade, guard).

``scaledl course release OUT/`` writes the bundle, ``scaledl course grade DIR --lab labNN`` grades;
``docs/instructor-guide.md`` says how to use both.
"""
