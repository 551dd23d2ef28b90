from pi_table.cli import main

raise SystemExit(main())
