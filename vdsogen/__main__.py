import sys

from vdsogen.cli import main

sys.exit(main())
