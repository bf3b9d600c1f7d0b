"""`python -m interlink` is the `interlink` command."""

import sys

from interlink.cli import main

sys.exit(main())
