"""Careful reading of untrusted input: regular files only, strict JSON, short
descriptions of bad values for error messages.

Everything the frontend reads from a checkpoint goes through here, so that a
FIFO, a device, a directory, a deeply nested or huge-number JSON document
becomes one ``FdcError`` naming the file instead of a hang or a traceback.
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
from typing import BinaryIO

from . import FdcError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1

# config.json and model.safetensors.index.json are a few KiB to a few MiB.
MAX_JSON_FILE_BYTES = 64 * 1024 * 1024

# Longest integer literal the JSON parser accepts: anything longer is far out
# of every range the frontend takes (int64 has 19 digits), and Python refuses
# to convert more than 4300 digits anyway.
MAX_INT_DIGITS = 100

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def open_regular(path: str, error: type[FdcError] = FdcError) -> BinaryIO:
    """``path`` opened for binary reading; anything but a regular file is refused.

    The file is opened non-blocking, so a FIFO does not hang the open, and
    checked with fstat on the open descriptor (no race with a rename).
    """
    if "\0" in path:
        raise error(f"{path!r}: file name contains a NUL byte")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _FILE_KINDS if test(mode)), "a special file")
            raise error(f"{path}: not a regular file ({kind})")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int, error: type[FdcError] = FdcError) -> bytes:
    """The whole regular file ``path``, refused beyond ``limit`` bytes."""
    with open_regular(path, error) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise error(f"{path}: {size} bytes is more than the {limit} bytes allowed")
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise error(f"{path}: cannot read: {e.strerror or e}") from None
    if len(data) > limit:
        raise error(f"{path}: more than the {limit} bytes allowed")
    return data


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _JSONLimit(f"an integer of {digits} digits is out of range")
    return int(text)


def _parse_constant(name: str):
    raise _JSONLimit(f"{name} is not valid JSON")


class _JSONLimit(ValueError):
    pass


def parse_json(raw: bytes, where: str, error: type[FdcError] = FdcError):
    """Parse ``raw`` as strict JSON (no NaN/Infinity, no absurd integers).

    ``where`` prefixes every message (a file name, or "FILE: header").
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{where}: not valid JSON: not UTF-8 ({e.reason} at byte "
                    f"{e.start})") from None
    try:
        return json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
    except _JSONLimit as e:
        raise error(f"{where}: {e}") from None
    except json.JSONDecodeError as e:
        raise error(f"{where}: not valid JSON: {e}") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # anything else json refuses
        raise error(f"{where}: not valid JSON: {e}") from None


def describe(value) -> str:
    """A short, always-printable description of a JSON value for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 400 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 200 else repr(value[:200]) + "..."
    if isinstance(value, (list, dict)):
        try:
            text = json.dumps(value, allow_nan=True)
        except (RecursionError, ValueError, TypeError):
            text = None
        if text is not None and len(text) <= 80:
            return text
        kind = "a list" if isinstance(value, list) else "an object"
        return f"{kind} of {len(value)} {'elements' if isinstance(value, list) else 'keys'}"
    return type(value).__name__


def is_int(value) -> bool:
    """A real integer (bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A real int or float (bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def to_f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (inf when out of its range), as the
    IR's f32 attributes hold it."""
    if not math.isfinite(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # rounds beyond float32's largest value
        return math.copysign(math.inf, x)
