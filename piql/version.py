"""piql's version, as installed (pyproject.toml is the one place it is written)."""
from __future__ import annotations

from importlib import metadata

try:
    VERSION = metadata.version("piql")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "0+unknown"
