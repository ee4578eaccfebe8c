"""Old home of :mod:`scaledl.course.produce.mpi_runner` (moved to the student's side of the grader, which the
sandbox holds): importing this module gives that one, the same module object, so tests and notebooks written
before the move (``from scaledl.course.tasks import mpi_runner``) reach, and patch, the runner the grader uses."""

import sys

from scaledl.course.produce import mpi_runner

sys.modules[__name__] = mpi_runner
