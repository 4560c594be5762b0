"""python -m tinyunits.gradcheck [pattern]: check every registered op and unit."""
import sys

from . import main

sys.exit(main())
