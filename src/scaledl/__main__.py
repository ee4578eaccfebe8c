from scaledl import _startup  # noqa: F401  (before anything imports nbformat: see there)
from scaledl.cli import main

raise SystemExit(main())
