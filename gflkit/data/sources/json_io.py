"""Reading raw JSON files: whole (with a memory check first) or streamed, always validated.

Both readers refuse a file that is not valid JSON in one line naming the file
and the position (``line L column C``) or the byte that is not UTF-8, so a
file cut short is never read up to the cut:

* :func:`read_json` parses a whole file with :mod:`json`, after checking that
  the Python objects it becomes fit in the available memory;
* :func:`stream_object` reads a top-level object whose big arrays (the
  ``nodes`` and ``links`` of a node-link graph) are handed over in batches
  while the file is read in chunks, so memory holds a chunk and what the
  caller keeps. Every value is decoded by the C decoder of :mod:`json`; the
  structure between them is checked here.
"""
from __future__ import annotations

import codecs
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from ...errors import DataFormatError
from ...io import require_memory

__all__ = []

#: Memory of the Python objects a JSON text becomes, per byte of the file (measured: 8-12x for
#: maps of lists of integers), with a margin.
JSON_BYTES_PER_BYTE = 16

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _not_json(path, line: int, column: int, msg: str, hint: str) -> DataFormatError:
    return DataFormatError(f"{path}, line {line} column {column}: not valid JSON ({msg}); {hint}")


def _not_utf8(path, offset: int, hint: str) -> DataFormatError:
    return DataFormatError(f"{path}, byte {offset}: not valid UTF-8; save the file as UTF-8 JSON ({hint})")


def read_json(path: str | os.PathLike, hint: str = "check the file") -> Any:
    """The JSON value in ``path``, refused in one line when it is not valid UTF-8 JSON or too big for memory."""
    path = Path(path)
    size = path.stat().st_size
    require_memory(JSON_BYTES_PER_BYTE * size, path, "split the file or use a machine with more memory")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _not_utf8(path, err.start, hint) from None
    del raw
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise _not_json(path, err.lineno, err.colno, err.msg, hint) from None
    except RecursionError:
        raise DataFormatError(f"{path}: not valid JSON here (nested too deeply); {hint}") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise DataFormatError(f"{path}: not valid JSON here ({str(err).splitlines()[0][:200]}); {hint}") from None


class _Stream:
    """A UTF-8 JSON text read in chunks, with the line and column of the current position for messages."""

    def __init__(self, f, path: Path, hint: str, chunk: int, cap: int) -> None:
        self.f, self.path, self.hint, self.chunk, self.cap = f, path, hint, chunk, cap
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.pos, self.eof = "", 0, False
        self.base = 0  # characters before buf[0]
        self.plain_until = -1  # no batches before this character (a cut there failed)
        self.read_bytes = 0
        self.line, self.col0 = 1, 0  # line of buf[0] and its column offset in that line

    def more(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        block = self.f.read(self.chunk)
        try:
            text = self.decoder.decode(block, final=not block)
        except UnicodeDecodeError as err:
            raise _not_utf8(self.path, self.read_bytes + err.start, self.hint) from None
        self.read_bytes += len(block)
        self.eof = not block
        if self.pos:
            head = self.buf[:self.pos]
            newlines = head.count("\n")
            self.line += newlines
            self.col0 = self.pos - head.rfind("\n") - 1 if newlines else self.col0 + self.pos
            self.base += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += text
        return True

    def error(self, msg: str, pos: int | None = None) -> DataFormatError:
        pos = self.pos if pos is None else pos
        head = self.buf[:pos]
        newlines = head.count("\n")
        column = pos - head.rfind("\n") if newlines else self.col0 + pos + 1
        return _not_json(self.path, self.line + newlines, column, msg, self.hint)

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise self.error(f"expecting {what}" if self.pos < len(self.buf) else f"the file ends before {what}")
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value; more of the file is read while the value may continue beyond the buffer."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                if not self.eof and len(self.buf) - self.pos < self.cap:
                    self.more()
                    continue
                if self.eof and err.pos >= len(self.buf):
                    raise self.error("the file ends inside a value", err.pos) from None
                raise self.error(err.msg, err.pos) from None
            except RecursionError:
                raise self.error("nested too deeply") from None
            except ValueError as err:
                raise self.error(str(err).splitlines()[0][:200]) from None
            if end < len(self.buf) or self.eof or not self.more():  # a number may go on in the next chunk
                self.pos = end
                return value

    def batch(self, window: int = 1 << 20) -> list | None:
        """Several complete array elements at once (decoded in one call), or ``None`` if none are found.

        The elements are cut after a ``}`` that a ``,`` follows, within
        ``window`` characters. If that ``}`` lies inside a string or a nested
        object, or the array ends before it, the cut text is not valid JSON on
        its own: ``None``, and up to that ``}`` the caller takes one element at
        a time (so a failed cut is tried once, never again for each element).
        """
        if self.base + self.pos < self.plain_until:
            return None
        end = min(len(self.buf), self.pos + window)
        for _ in range(4):
            end = self.buf.rfind("}", self.pos, end)
            if end < 0:
                return None
            after = _WS.match(self.buf, end + 1).end()
            if after < len(self.buf) and self.buf[after] == ",":
                try:
                    items = json.loads("[" + self.buf[self.pos:end + 1] + "]")
                except (ValueError, RecursionError):
                    self.plain_until = self.base + end
                    return None
                self.pos = after + 1
                return items
        return None

    def array(self, each: Callable[[list], None]) -> None:
        """Stream the array that starts here to ``each`` in batches of elements."""
        self.expect("[", "'['")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            items = self.batch()
            if items:
                each(items)
                continue
            each([self.value()])
            char = self.peek()
            if char == ",":
                self.pos += 1
            elif char == "]":
                self.pos += 1
                return
            else:
                raise self.error("expecting ',' or ']'" if char else "the file ends inside an array")


def stream_object(path: str | os.PathLike, arrays: Mapping[str, Callable[[list], None]], hint: str = "check the file",
                  chunk: int = 1 << 22, cap: int = 1 << 26) -> dict[str, Any]:
    """Read the JSON object in ``path``, streaming the arrays named in ``arrays`` to their callbacks.

    Args:
        path: the file (UTF-8, optionally with a byte-order mark).
        arrays: key -> function called with successive lists of that array's elements.
        hint: what to say after the position when the file is refused.
        chunk: characters read at a time.
        cap: longest single value (characters) looked for across chunks.

    Returns:
        The object's other members (small values, decoded whole).

    Raises:
        DataFormatError: the file is not one valid JSON object (named with line
            and column), a streamed key is not an array, or a key repeats.
    """
    path = Path(path)
    rest: dict[str, Any] = {}
    seen: set[str] = set()
    with open(path, "rb") as f:
        s = _Stream(f, path, hint, chunk, cap)
        if s.peek() != "{":
            raise s.error("expecting a JSON object '{'" if s.peek() else "the file is empty")
        s.pos += 1
        if s.peek() == "}":
            s.pos += 1
        else:
            while True:
                if s.peek() != '"':
                    raise s.error("expecting a key in double quotes" if s.peek() else "the file ends inside the object")
                at = s.pos
                key = s.value()
                if key in seen:
                    raise s.error(f"the key {key!r} appears twice", at)
                seen.add(key)
                s.expect(":", "':'")
                if key in arrays:
                    if s.peek() != "[":
                        raise s.error(f"{key!r} must be an array")
                    s.array(arrays[key])
                else:
                    rest[key] = s.value()
                char = s.peek()
                if char == "}":
                    s.pos += 1
                    break
                if char != ",":
                    raise s.error("expecting ',' or '}'" if char else "the file ends inside the object")
                s.pos += 1
        if s.peek():
            raise s.error("extra data after the object")
    return rest
