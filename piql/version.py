"""piql's version, as installed (pyproject.toml is the one place it is written).

Read on first use: importlib.metadata costs a short ``piql lint`` a tenth of its time."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("piql")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
