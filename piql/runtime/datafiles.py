"""Reading the files ``load`` takes: CSV with a header row, or Parquet; one file, a
directory of them (a Spark-style output directory: files starting with ``_`` or ``.`` are
left out) or a glob pattern.

Rows are read as a stream: a CSV row at a time, Parquet one record batch of
:data:`BATCH_ROWS` at a time, so a load holds a batch, never the whole file, as Python
objects.

Rows come out as dicts keyed by the file's column names, typed from the
table's declared column types for CSV (Parquet carries its own types). A file
that cannot be read (missing, a directory, not UTF-8, a ragged row, a value
that is not of its column's type, not Parquet at all) raises
:class:`DataFileError` naming the file, and the line and column where one is
known, before anything is written. No SQL is ever built from a path: Parquet
is read by pyarrow, in record batches.
"""
from __future__ import annotations

import csv
import glob
from pathlib import Path
from typing import Any, Iterator

from piql.catalog import Table
from piql.errors import Location
from piql.runtime.errors import DataFileError
from piql.sql_types import base_name, from_text

BATCH_ROWS = 65_536  # Parquet rows decoded at a time


GLOB_CHARACTERS = frozenset("*?[")


def read_file(table: Table, path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of the CSV or Parquet file(s) at ``path`` for ``table`` (a ``.parquet``
    suffix means Parquet), file after file."""
    return read_files(table, data_files(path))


def read_files(table: Table, found: list[Path]) -> Iterator[dict[str, Any]]:
    """The rows of the files ``found`` (as :func:`data_files` lists them), file after file."""
    for file in found:
        yield from (_parquet_rows if is_parquet(file) else _csv_rows)(table, file)


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


def data_files(path: str | Path) -> list[Path]:
    """The files a load reads: ``path`` itself, the data files of a directory (sorted,
    not those starting with ``_`` or ``.``: Spark's markers), or the files a glob pattern
    matches (sorted); all CSV or all Parquet. A directory named ``*.parquet`` is one
    Parquet dataset."""
    path = Path(path)
    if not path.exists():
        if GLOB_CHARACTERS & set(str(path)):
            found = sorted(Path(p) for p in glob.glob(str(path)) if Path(p).is_file())
            if not found:
                raise DataFileError(f"{path}: no file matches")
            return _one_format(path, found)
        raise DataFileError(f"{path}: no such file")
    if not path.is_dir() or is_parquet(path):
        return [path]
    found = sorted(p for p in path.iterdir() if p.is_file() and p.name[0] not in "_."
                   and p.suffix.lower() in (".csv", ".parquet"))
    if not found:
        raise DataFileError(f"{path}: is a directory, not a CSV or Parquet file, and holds none")
    return _one_format(path, found)


def _one_format(path: Path, found: list[Path]) -> list[Path]:
    if len({is_parquet(p) for p in found}) > 1:
        raise DataFileError(f"{path}: holds both CSV and Parquet files; load one kind at a time")
    return found


def _csv_rows(table: Table, path: Path) -> Iterator[dict[str, Any]]:
    name = str(path)
    try:
        # utf-8-sig: a byte-order mark some spreadsheets write is not part of the first name
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                return
            columns = csv_header(table, header, name)
            last = reader.line_num  # the file's lines read so far
            for record in reader:
                # a quoted field may hold newlines: a record spans lines first..last
                line, last = last + 1, reader.line_num
                if not record:
                    continue  # a blank line
                if any("\x00" in field for field in record):
                    raise DataFileError("a NUL byte: this is a binary file, not CSV text",
                                        Location(name, line, 1))
                if len(record) != len(header):
                    raise DataFileError(
                        f"row has {len(record)} fields, the header has {len(header)}",
                        Location(name, line, 1))
                yield dict(_typed_record(table, columns, record, name, line))
    except UnicodeDecodeError:
        line, column, byte = _first_non_utf8(path)
        raise DataFileError(f"not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8",
                            Location(name, line, column)) from None
    except csv.Error as err:
        raise DataFileError(f"not a readable CSV file: {err}",
                            Location(name, reader.line_num or 1, 1)) from None
    except OSError as err:
        raise DataFileError(f"{name}: cannot be read: {err.strerror or err}") from None


def _typed_record(table: Table, columns: list[str], record: list[str], name: str,
                  line: int) -> Iterator[tuple[str, Any]]:
    """A record's values typed, an error naming the line its field starts on (the record's
    first line, plus the newlines of the quoted fields before it)."""
    for position, (column, text) in enumerate(zip(columns, record)):
        yield column, typed(table, column, text, Location(name, line, position + 1))
        line += text.count("\n")


def _first_non_utf8(path: Path) -> tuple[int, int, int]:
    """Line, column (in bytes) and value of the first byte that is not UTF-8."""
    line, start = 1, 0  # start: offset of the current line
    offset, size = 0, 1 << 16
    with open(path, "rb") as handle:
        while chunk := handle.read(size):
            try:
                chunk.decode("utf-8")
                bad = None
            except UnicodeDecodeError as err:
                # a character cut by the chunk's end (not the file's) is read again whole
                cut = err.reason == "unexpected end of data" and len(chunk) == size
                bad = None if cut else err.start
                if cut:
                    handle.seek(offset + err.start)
                    chunk = chunk[:err.start]
            lines = chunk[:bad].count(b"\n")
            if lines:
                line += lines
                start = offset + chunk[:bad].rindex(b"\n") + 1
            if bad is not None:
                return line, offset + bad - start + 1, chunk[bad]
            offset += len(chunk)
    return line, 1, 0


def csv_header(table: Table, header: list[str], name: str) -> list[str]:
    columns = []
    for position, text in enumerate(header):
        column = table.column(text.strip())
        if column is None:
            raise DataFileError(
                f"CSV column '{text}' is not a column of {table.name} "
                f"(columns: {', '.join(table.column_names)})", Location(name, 1, position + 1))
        if column.name in columns:
            raise DataFileError(f"CSV column '{text}' appears twice", Location(name, 1, position + 1))
        columns.append(column.name)
    return columns


def typed(table: Table, column: str, text: str, where: Location) -> Any:
    """CSV values arrive as text; give them their column's type (empty is NULL)."""
    if text == "":
        return None
    declared = table.column(column).type  # type: ignore[union-attr]
    try:
        return from_text(declared, text)
    except ValueError:
        raise DataFileError(f"{table.name}.{column} is {base_name(declared)}; got {text!r}",
                            where) from None


def _parquet_rows(table: Table, path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    name = str(path)
    try:
        dataset = ds.dataset(str(path), format="parquet")
        for position, field in enumerate(dataset.schema):
            if table.column(field.name) is None:
                raise DataFileError(
                    f"Parquet column '{field.name}' is not a column of {table.name} "
                    f"(columns: {', '.join(table.column_names)})", Location(name, 1, position + 1))
        for batch in dataset.to_batches(batch_size=BATCH_ROWS):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as err:
        raise DataFileError(f"{name}: not a readable Parquet file: {err}") from None
