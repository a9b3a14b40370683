"""`python -m speedpatch.lsp`: serve over stdio."""

import sys

from speedpatch.lsp.server import main

sys.exit(main())
