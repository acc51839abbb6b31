"""A bounds-checked flatbuffer reader: every offset, vtable and vector is verified before use.

Why hand-written rather than flatc's generated Python: the generated accessors trust the
buffer (a corrupt file raises IndexError or struct.error, or reads garbage), so a verifier
would be needed anyway; this module is that verifier and the accessor in one pass, with the
field path of every failure. It applies the rules of the C++ ``flatbuffers::Verifier`` (25.2) that
ExecuTorch runs at load, no fewer and no more, so refsim refuses exactly the structures
ExecuTorch refuses; TFLite and TFLM run the same verifier on a model, so the .tflite reader
(refsim/tflite/reader.py) uses this module too, each reader passing its own error class.
The rules: objects inside the buffer; offsets non-zero, below 2^31 and 4-byte aligned;
tables 4-byte aligned; vtables 2-byte aligned, of an even size that fits (0 and 2
included: every field is then absent); table fields inside the buffer and aligned to their
size (a field may overlap the table's own vtable offset); vector lengths 4-byte aligned
(their elements need no more); strings NUL-terminated (their bytes need not be UTF-8:
they are decoded with backslash escapes); at most 1,000,000 tables.

Offsets in a flatbuffer only point forward, so there are no cycles; the schema has no
recursive tables, so nesting depth is bounded. What a corrupt file *can* do is make many
offsets point at the same large object; a budget on decoded bytes (a valid file decodes
each byte at most once) turns that into an error instead of quadratic work.
"""

from __future__ import annotations

import struct

from refsim.errors import RefsimError
from refsim.pte.errors import ProgramError

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_SCALAR = {  # name -> (struct, size)
    "bool": (struct.Struct("<?"), 1),
    "i8": (struct.Struct("<b"), 1),
    "u8": (struct.Struct("<B"), 1),
    "f32": (struct.Struct("<f"), 4),
    "i32": (_I32, 4),
    "u32": (_U32, 4),
    "i64": (struct.Struct("<q"), 8),
    "u64": (struct.Struct("<Q"), 8),
    "f64": (struct.Struct("<d"), 8),
}
_VECTOR_CODE = {"bool": "?", "u8": "B", "i32": "i", "i64": "q", "u64": "Q", "f32": "f", "f64": "d"}


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class FlatReader:
    """Reads the flatbuffer in ``buf[:end]``; no object may start before ``start``.

    ``error`` is the class every failure raises, ``error(message, field_path)``: the .pte
    reader's `ProgramError` by default, the .tflite reader's `ModelError`."""

    def __init__(
        self, buf: memoryview, end: int, start: int = 0, error: type[RefsimError] = ProgramError
    ) -> None:
        self.buf = buf
        self.end = end
        self.start = start
        self.error = error
        # Generous: a valid file decodes each of its bytes at most once.
        self.budget = 2 * end + 4096
        self.tables = 0

    def charge(self, nbytes: int, path: str) -> None:
        self.budget -= nbytes
        if self.budget < 0:
            raise self.error(
                "flatbuffer offsets share or overlap objects more than a valid file can "
                f"(decoded more than twice the {self.end}-byte file)",
                path,
            )

    def check_range(self, pos: int, size: int, align: int, path: str, what: str) -> None:
        if pos < self.start or pos + size > self.end:
            raise self.error(
                f"{what} at byte {pos} (+{size}) lies outside the flatbuffer [{self.start}, {self.end})",
                path,
            )
        if pos % align:
            raise self.error(f"{what} at byte {pos} is not {align}-byte aligned", path)

    def root(self) -> Table:
        if self.end < 8:
            raise self.error(f"{self.end} bytes cannot hold a root offset and file identifier")
        return Table(self, _offset_target(self, 0, "root offset", ""), "")


#: flatbuffers::Verifier's default max_tables.
MAX_TABLES = 1_000_000


def _offset_target(r: FlatReader, pos: int, what: str, path: str) -> int:
    """Where the uoffset at ``pos`` points: ``Verifier::VerifyOffset`` (aligned, in the buffer,
    not 0 (an object cannot be its own offset), below 2^31, the target inside the buffer)."""
    r.check_range(pos, 4, 4, path, what)
    (offset,) = _U32.unpack_from(r.buf, pos)
    if offset == 0 or offset >= 1 << 31:
        raise r.error(f"{what} at byte {pos} is {offset} (must be in [1, 2^31))", path)
    r.check_range(pos + offset, 1, 1, path, f"target of the {what} at byte {pos}")
    return pos + offset


class Table:
    """One verified table: its vtable is in range and every field is checked on access."""

    __slots__ = ("path", "pos", "r", "tsize", "vsize", "vt")

    def __init__(self, reader: FlatReader, pos: int, path: str) -> None:
        self.r = reader
        self.path = path
        self.pos = pos
        reader.tables += 1
        if reader.tables > MAX_TABLES:
            raise reader.error(f"more than {MAX_TABLES:,} tables (the flatbuffers verifier's limit)", path)
        reader.check_range(pos, 4, 4, path, "table")
        (soffset,) = _I32.unpack_from(reader.buf, pos)
        vt = pos - soffset
        reader.check_range(vt, 2, 2, path, "vtable")
        (vsize,) = _U16.unpack_from(reader.buf, vt)
        if vsize % 2:
            raise reader.error(f"vtable size {vsize} is odd", path)
        reader.check_range(vt, vsize, 2, path, "vtable")
        # The vtable's object size is not checked: flatc records less than the fields span
        # when it pads before an 8-byte field, and the C++ verifier ignores it too.
        tsize = _U16.unpack_from(reader.buf, vt + 2)[0] if vsize >= 4 else 0
        reader.charge(max(tsize, 4), path)
        self.vt = vt
        self.vsize = vsize
        self.tsize = tsize

    # -- fields ----------------------------------------------------------------------------

    def _field(self, slot: int, size: int, name: str) -> int:
        """Absolute position of field ``slot`` (0 if absent), checked to lie in the buffer."""
        entry = 4 + 2 * slot
        if entry + 2 > self.vsize:
            return 0
        (voffset,) = _U16.unpack_from(self.r.buf, self.vt + entry)
        if voffset == 0:
            return 0
        pos = self.pos + voffset
        self.r.check_range(pos, size, size, join(self.path, name), "field")
        return pos

    def scalar(self, slot: int, kind: str, name: str, default: int | float | bool = 0):
        unpacker, size = _SCALAR[kind]
        pos = self._field(slot, size, name)
        if not pos:
            return default
        return unpacker.unpack_from(self.r.buf, pos)[0]

    def _target(self, slot: int, name: str) -> int:
        """Where the offset field ``slot`` points (0 if absent)."""
        pos = self._field(slot, 4, name)
        if not pos:
            return 0
        return _offset_target(self.r, pos, "offset", join(self.path, name))

    def table(self, slot: int, name: str, path: str | None = None) -> Table | None:
        target = self._target(slot, name)
        return Table(self.r, target, path or join(self.path, name)) if target else None

    def _vector(self, slot: int, name: str, elem_size: int) -> tuple[int, int] | None:
        """(first element position, count) of a vector field, checked to fit the buffer."""
        target = self._target(slot, name)
        if not target:
            return None
        path = join(self.path, name)
        r = self.r
        r.check_range(target, 4, 4, path, "vector length")
        (count,) = _U32.unpack_from(r.buf, target)
        if count >= ((1 << 31) - 1) // elem_size:
            raise r.error(f"vector of {count} elements exceeds the 2 GiB flatbuffer limit", path)
        nbytes = count * elem_size
        r.check_range(target + 4, nbytes, 1, path, f"vector of {count} elements")
        r.charge(nbytes, path)
        return target + 4, count

    def scalars(self, slot: int, kind: str, name: str) -> tuple | None:
        """A vector of scalars as a tuple (None when the field is absent)."""
        code = _VECTOR_CODE[kind]
        found = self._vector(slot, name, _SCALAR[kind][1])
        if found is None:
            return None
        start, count = found
        return struct.unpack_from(f"<{count}{code}", self.r.buf, start)

    def bytes_view(self, slot: int, name: str) -> memoryview | None:
        """A [ubyte] vector as a zero-copy view of the file."""
        found = self._vector(slot, name, 1)
        if found is None:
            return None
        start, count = found
        return self.r.buf[start : start + count]

    def string(self, slot: int, name: str) -> str | None:
        found = self._vector(slot, name, 1)
        if found is None:
            return None
        start, count = found
        path = join(self.path, name)
        self.r.check_range(start + count, 1, 1, path, "string terminator")
        if self.r.buf[start + count] != 0:
            raise self.r.error("string is not NUL-terminated", path)
        return str(self.r.buf[start : start + count], "utf-8", "backslashreplace")

    def tables(self, slot: int, name: str, path: str | None = None) -> list[Table] | None:
        """A vector of tables; element ``i`` gets the path ``<path>[i]``."""
        found = self._vector(slot, name, 4)
        if found is None:
            return None
        start, count = found
        base = path or join(self.path, name)
        offsets = struct.unpack_from(f"<{count}I", self.r.buf, start)
        return [Table(self.r, start + 4 * i + off, f"{base}[{i}]") for i, off in enumerate(offsets)]
