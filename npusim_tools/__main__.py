"""``python -m npusim_tools`` is the ``npusim`` command."""
import sys

from npusim_tools.cli import main

sys.exit(main())
