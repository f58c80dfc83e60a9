"""What the installed package says about itself: its version and its documentation's URL
(pyproject.toml is the one place they are written).

Read on first use: importlib.metadata costs a short ``piql lint`` a tenth of its time."""
from __future__ import annotations

import functools

# docs/ of the repository, for a source tree that was never installed (pyproject.toml's
# [project.urls] Documentation; a test keeps the two equal).
DOCUMENTATION = "https://github.com/piql/piql/blob/main/docs"


@functools.lru_cache(maxsize=1)
def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("piql")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


@functools.lru_cache(maxsize=1)
def documentation() -> str:
    """The URL of piql's docs/ directory (no trailing slash): the ``Documentation`` project
    URL of the installed package, else :data:`DOCUMENTATION`."""
    from importlib import metadata

    try:
        urls = metadata.metadata("piql").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    return project_url(urls, "Documentation") or DOCUMENTATION


def project_url(urls: list[str], label: str) -> str | None:
    """The URL of ``label`` among core metadata's ``Project-URL: label, url`` fields."""
    for entry in urls:
        name, _, url = entry.partition(",")
        if name.strip().lower() == label.lower() and url.strip():
            return url.strip().rstrip("/")
    return None
