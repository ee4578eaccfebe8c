"""Running a course on the book: a student release without solutions (release), what a student bundle is and
how its ``book check`` works (bundle), the scan that proves nothing secret leaked (leaks), the instructor
guide's generated tables (guide), and grading submitted labs without trusting them (grade, and the steps it
runs: submissions, integrity, review, sandbox, worker, produce, exchange, tasks, feedback), and the same grader
as a Gradescope autograder (gradescope: ``scaledl course gradescope LAB``).

``scaledl course release OUT/`` writes the bundle, ``scaledl course grade DIR --lab labNN`` grades;
``docs/instructor-guide.md`` says how to use both, and what the grading sandbox protects.
"""
