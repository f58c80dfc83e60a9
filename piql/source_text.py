"""Reading a user's schema or queries file as text, with the place of an encoding mistake."""
from __future__ import annotations

from pathlib import Path

from piql.errors import InputError, Location


def read_source(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path`` (a byte order mark is dropped).

    ``what`` names the file in messages ("queries file"). A file that cannot be read, or
    is not UTF-8, is an :class:`InputError`; for bad bytes it points at the first one,
    its column counted in characters as every other location is.
    """
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror or err}", Location(file, 1, 1)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        start = err.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line_start = data.rfind(b"\n", 0, start) + 1
        bom = 3 if line_start == 0 and data.startswith(b"\xef\xbb\xbf") else 0
        column = len(data[line_start + bom:start].decode("utf-8")) + 1
        raise InputError(f"{what} is not UTF-8 text: byte 0x{data[start]:02x} cannot start or "
                         "continue a character; save the file as UTF-8",
                         Location(file, data.count(b"\n", 0, start) + 1, column)) from None
