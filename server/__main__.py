"""`python -m speedpatch ...` is the `speedpatch` command, for when the console script is not on PATH."""

import sys

from speedpatch.cli.main import main

sys.exit(main())
