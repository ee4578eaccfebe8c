"""Running a course with the book: grading submitted labs (grade, guard)."""
