import sys

from piql.cli import main

sys.exit(main())
