"""A compiled parser for numeric CSV blocks (the Google event tables), skipping unused fields.

One pass over the bytes: fields are split on commas, the wanted integer and float fields are
parsed in place and the others (user names, machine IDs...) are skipped without conversion. The
parser is strict: any line it is not sure about (wrong number of fields, a character that is not
part of a plain decimal number, an empty required field, a float it cannot convert exactly) makes
it give up on the block, and the caller re-parses that block line by line to count and locate the
bad rows (:mod:`.csvparse`). Floats are converted exactly (Clinger's fast path: an integer
mantissa below 2**53 divided or multiplied by an exact power of ten up to 10**22 is correctly
rounded), so the result equals Arrow's and Python's ``float()``; other floats fall back too.
"""

from __future__ import annotations

import numpy as np

from schedlab import _jit

_jit.configure()

import numba  # noqa: E402

SKIP, INT, FLOAT = 0, 1, 2
COMMA, NEWLINE, CR = 44, 10, 13
MISSING_INT = -1
INT64_MAX = np.iinfo(np.int64).max
_POW10 = np.array([10.0**i for i in range(23)])


@numba.njit(cache=True, nogil=True)
def _parse(data, kinds, slots, required, ints, floats, pow10):
    """Fill ``ints[slot, row]`` / ``floats[slot, row]``. Returns the number of rows parsed, or
    -(line index + 1) of the first line it could not parse."""
    n = data.shape[0]
    n_fields = kinds.shape[0]
    pos = 0
    row = 0
    while pos < n:
        if row >= ints.shape[1]:
            return -(row + 1)
        field = 0
        while True:
            # one field: [pos, end)
            start = pos
            while pos < n and data[pos] != COMMA and data[pos] != NEWLINE:
                pos += 1
            end = pos
            if end > start and data[end - 1] == CR and (pos >= n or data[pos] == NEWLINE):
                end -= 1
            if field >= n_fields:
                return -(row + 1)
            kind = kinds[field]
            if kind != SKIP:
                slot = slots[field]
                if end == start:
                    if required[field]:
                        return -(row + 1)
                    if kind == INT:
                        ints[slot, row] = MISSING_INT
                    else:
                        floats[slot, row] = np.nan
                else:
                    i = start
                    neg = False
                    if data[i] == 45:  # '-'
                        neg = True
                        i += 1
                    elif data[i] == 43:  # '+'
                        i += 1
                    if i == end:
                        return -(row + 1)
                    mant = 0
                    digits = 0
                    frac = 0
                    seen_dot = False
                    while i < end:
                        ch = data[i]
                        if 48 <= ch <= 57:
                            d = np.int64(ch) - 48
                            if mant > (INT64_MAX - d) // 10 or digits >= 19:
                                return -(row + 1)
                            mant = mant * 10 + d
                            if mant > 0:
                                digits += 1
                            if seen_dot:
                                frac += 1
                        elif ch == 46 and kind == FLOAT and not seen_dot:  # '.'
                            seen_dot = True
                        else:
                            break
                        i += 1
                    exp = 0
                    if i < end:
                        if kind != FLOAT or (data[i] != 101 and data[i] != 69):  # e E
                            return -(row + 1)
                        i += 1
                        eneg = False
                        if i < end and (data[i] == 45 or data[i] == 43):
                            eneg = data[i] == 45
                            i += 1
                        if i == end:
                            return -(row + 1)
                        while i < end:
                            ch = data[i]
                            if not (48 <= ch <= 57) or exp > 400:
                                return -(row + 1)
                            exp = exp * 10 + (np.int64(ch) - 48)
                            i += 1
                        if eneg:
                            exp = -exp
                    if kind == INT:
                        ints[slot, row] = -mant if neg else mant
                    else:
                        e10 = exp - frac
                        if mant >= 9007199254740992:
                            return -(row + 1)
                        value = float(mant)
                        if e10 < 0:
                            if -e10 > 22:
                                return -(row + 1)
                            value = value / pow10[-e10]
                        elif e10 > 0:
                            if e10 > 22:
                                return -(row + 1)
                            value = value * pow10[e10]
                        floats[slot, row] = -value if neg else value
            field += 1
            if pos >= n or data[pos] == NEWLINE:
                break
            pos += 1  # past the comma
        if field != n_fields:  # (an empty line has one empty field: also handed back)
            return -(row + 1)
        row += 1
        pos += 1  # past the newline
    return row


class NumericLayout:
    """Which fields of an ``n_fields`` CSV table to parse: ``ints`` and ``floats`` map field
    positions (0-based) to output names; ``required`` fields may not be empty."""

    def __init__(
        self,
        n_fields: int,
        ints: dict[int, str],
        floats: dict[int, str],
        required: set[int],
    ) -> None:
        self.n_fields = n_fields
        self.kinds = np.zeros(n_fields, np.int64)
        self.slots = np.zeros(n_fields, np.int64)
        self.required = np.zeros(n_fields, np.bool_)
        self.int_names = list(ints.values())
        self.float_names = list(floats.values())
        for k, (pos, _) in enumerate(ints.items()):
            self.kinds[pos], self.slots[pos] = INT, k
        for k, (pos, _) in enumerate(floats.items()):
            self.kinds[pos], self.slots[pos] = FLOAT, k
        for pos in required:
            self.required[pos] = True

    def parse(self, data: bytes, n_lines: int) -> dict[str, np.ndarray] | None:
        """Columns of a block of ``n_lines`` lines, or None if any line needs the careful path."""
        buf = np.frombuffer(data, dtype=np.uint8)
        ints = np.empty((max(len(self.int_names), 1), n_lines), np.int64)
        floats = np.empty((max(len(self.float_names), 1), n_lines), np.float64)
        rows = _parse(buf, self.kinds, self.slots, self.required, ints, floats, _POW10)
        if rows != n_lines:
            return None
        out = {name: ints[k] for k, name in enumerate(self.int_names)}
        out.update({name: floats[k] for k, name in enumerate(self.float_names)})
        return out


SPACE, TAB, SEMICOLON = 32, 9, 59


@numba.njit(cache=True, nogil=True)
def _number(data, start, end, pow10):
    """(value, ok) of the plain decimal number in data[start:end] (exact or not ok)."""
    i = start
    neg = False
    if data[i] == 45:
        neg = True
        i += 1
    elif data[i] == 43:
        i += 1
    if i == end:
        return 0.0, False
    mant = np.int64(0)
    frac = 0
    digits = 0
    seen_dot = False
    seen_digit = False
    while i < end:
        ch = data[i]
        if 48 <= ch <= 57:
            if digits >= 15:
                return 0.0, False
            mant = mant * 10 + (np.int64(ch) - 48)
            seen_digit = True
            if mant > 0:
                digits += 1
            if seen_dot:
                frac += 1
        elif ch == 46 and not seen_dot:
            seen_dot = True
        else:
            return 0.0, False
        i += 1
    if not seen_digit or frac > 22:
        return 0.0, False
    value = float(mant)
    if frac:
        value = value / pow10[frac]
    return (-value if neg else value), True


@numba.njit(cache=True, nogil=True)
def _parse_ws(data, out, lines, pow10):
    """Whitespace-separated numeric rows into ``out[field, row]``; ``;`` comment lines and blank
    lines are skipped; ``lines[row]`` is the 0-based line of each row. Returns the number of
    rows, or -(line + 1) of the first line it could not parse."""
    n = data.shape[0]
    n_fields = out.shape[0]
    pos = 0
    row = 0
    line = 0
    while pos < n:
        while pos < n and (data[pos] == SPACE or data[pos] == TAB or data[pos] == CR):
            pos += 1
        if pos >= n:
            break
        if data[pos] == NEWLINE:
            pos += 1
            line += 1
            continue
        if data[pos] == SEMICOLON:
            while pos < n and data[pos] != NEWLINE:
                pos += 1
            pos += 1
            line += 1
            continue
        if row >= out.shape[1]:
            return -(line + 1)
        field = 0
        while True:
            start = pos
            while pos < n and data[pos] > SPACE:  # up to whitespace (space, tab, CR, LF)
                pos += 1
            if field >= n_fields:
                return -(line + 1)
            value, ok = _number(data, start, pos, pow10)
            if not ok:
                return -(line + 1)
            out[field, row] = value
            field += 1
            while pos < n and (data[pos] == SPACE or data[pos] == TAB or data[pos] == CR):
                pos += 1
            if pos >= n or data[pos] == NEWLINE:
                break
        if field != n_fields:
            return -(line + 1)
        lines[row] = line
        row += 1
        pos += 1
        line += 1
    return row


def parse_whitespace(
    data: bytes, n_fields: int, n_lines: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows of ``n_fields`` whitespace-separated plain decimal numbers (``;`` comments and blank
    lines skipped) as an (n_fields, rows) float array and the 0-based line of each row; None
    if any line needs the careful path."""
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.empty((n_fields, n_lines), np.float64)
    lines = np.empty(n_lines, np.int64)
    rows = _parse_ws(buf, out, lines, _POW10)
    if rows < 0:
        return None
    return out[:, :rows], lines[:rows]
