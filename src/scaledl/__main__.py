from scaledl.cli import main

raise SystemExit(main())
