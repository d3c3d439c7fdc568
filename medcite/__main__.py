"""``python -m medcite ...``: the same as the ``medcite`` command."""

import sys

from medcite.cli import main

sys.exit(main())
