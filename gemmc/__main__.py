from gemmc.cli import main

raise SystemExit(main())
