"""``python -m bertviz_lab ...`` is the ``bertviz-lab`` command."""
import sys

from .cli import main

sys.exit(main())
