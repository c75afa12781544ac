"""Resource quantities, as ``k8s.io/apimachinery/pkg/api/resource.Quantity``.

A quantity such as ``"250m"``, ``"1.5Gi"`` or ``"1e3"`` is held as an exact
:class:`fractions.Fraction` plus the *format* of the suffix it was written
with (``DecimalSI``, ``BinarySI`` or ``DecimalExponent``). No floating point
is ever involved, so ``0.1 + 0.2`` CPUs is exactly ``300m``.

Parsing mirrors ``ParseQuantity``:

* the same hand-written scanner (so ``"1."``, ``".5"``, ``"1.G"`` and even
  ``"."`` parse, while ``" 1"`` or ``"1 "`` do not), with upstream's three
  error messages;
* non-zero values finer than 1n are rounded *away from zero* to 1n
  (``"0.5n"`` -> ``"1n"``);
* a ``BinarySI`` value is capped at 2^63-1 (``"9Ei"``), and a ``BinarySI``
  value strictly between 0 and 1 is switched to ``DecimalSI``.

``str(q)`` is upstream's canonical form (``CanonicalizeBytes``): the largest
suffix of the quantity's own format that leaves an integer mantissa, e.g.
``"1000m"`` -> ``"1"``, ``"1.5Gi"`` -> ``"1536Mi"``, ``"0.5"`` -> ``"500m"``.
``BinarySI`` values below 1024 in magnitude, or not whole, print as
``DecimalSI``; ``DecimalSI`` values beyond the ``E`` suffix print in exponent
form (``"1e21"``).

Deviation (documented): exponents beyond ±10000 (``"1e99999"``) are refused
with the "numeric part" error instead of being materialised, and binary
canonical forms never go past the ``Ei`` suffix.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

__all__ = [
    "Quantity",
    "parse_quantity",
    "cpu_millis",
    "bytes_value",
    "DECIMAL_SI",
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
]

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
_FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_BY_EXP = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BIN_BY_STEP = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_SIGNED_INT = re.compile(r"[+-]?[0-9]+")

_NANO = 10**9
_MAX_INT64 = 2**63 - 1
_MAX_EXPONENT = 10000

QuantityLike = Union["Quantity", str, int, float]


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact resource amount with the suffix format it prints in.

    Attributes:
        value: the amount as a ``Fraction`` (always a whole number of nano units).
        format: ``"DecimalSI"`` (default), ``"BinarySI"`` or ``"DecimalExponent"``.

    Equality, hashing and ordering use ``value`` only (as upstream ``Cmp``), so
    ``parse_quantity("1Ki") == parse_quantity("1024")``. ``+`` and ``-`` take
    another Quantity and keep the left operand's format, unless the left operand
    is zero, in which case the right one's format wins (as ``Quantity.Add``).
    ``q * n`` takes an int. ``sum()`` over quantities works.

    Raises:
        ValueError: ``value`` is not a multiple of 1n, or ``format`` is unknown.
    """

    value: Fraction
    format: str = DECIMAL_SI

    def __post_init__(self) -> None:
        v = Fraction(self.value)
        if (v * _NANO).denominator != 1:
            raise ValueError(f"quantity value {v} is not a whole number of nano units")
        if self.format not in _FORMATS:
            raise ValueError(f"unknown quantity format {self.format!r}")
        object.__setattr__(self, "value", v)

    # --- comparisons -----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value < other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    # --- arithmetic ------------------------------------------------------
    def __add__(self, other: object) -> "Quantity":
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __radd__(self, other: object) -> "Quantity":
        # Lets sum() start from the int 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __sub__(self, other: object) -> "Quantity":
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value - other.value, fmt)

    def __neg__(self) -> "Quantity":
        return Quantity(-self.value, self.format)

    def __mul__(self, n: object) -> "Quantity":
        if not isinstance(n, int) or isinstance(n, bool):
            return NotImplemented
        return Quantity(self.value * n, self.format)

    __rmul__ = __mul__

    # --- accessors -------------------------------------------------------
    def is_zero(self) -> bool:
        """True for a zero amount (any format)."""
        return self.value == 0

    def int_value(self) -> int:
        """The amount as an int, rounded away from zero (upstream ``Value()``)."""
        return _round_away(self.value)

    def milli_value(self) -> int:
        """The amount in thousandths, rounded away from zero (upstream ``MilliValue()``)."""
        return _round_away(self.value * 1000)

    def __str__(self) -> str:
        return _canonical(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _round_away(v: Fraction) -> int:
    """Round to an integer away from zero (``inf.RoundUp``)."""
    n, d = abs(v.numerator), v.denominator
    q = -(-n // d)
    return q if v >= 0 else -q


# --- canonical form ------------------------------------------------------

def _canonical(v: Fraction, fmt: str) -> str:
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    if fmt == BINARY_SI:
        if a < 1024 or a.denominator != 1:
            fmt = DECIMAL_SI  # avoids rounding, as upstream does
        else:
            n, step = a.numerator, 0
            while step < 6 and n % 1024 == 0:
                n //= 1024
                step += 1
            return f"{sign}{n}{_BIN_BY_STEP[step]}"
    mantissa, exp = _decimal_parts(a)
    if fmt == DECIMAL_SI and exp in _DEC_BY_EXP:
        suffix = _DEC_BY_EXP[exp]
    else:  # DecimalExponent, or DecimalSI past "E" (upstream falls back to "e")
        suffix = f"e{exp}" if exp else ""
    return f"{sign}{mantissa}{suffix}"


def _decimal_parts(a: Fraction) -> tuple[int, int]:
    """``a`` (> 0, denominator of only 2s and 5s) as ``mantissa * 10**exp``,
    mantissa an int and exp the largest multiple of 3 that keeps it whole."""
    d, k2, k5 = a.denominator, 0, 0
    while d % 2 == 0:
        d //= 2
        k2 += 1
    while d % 5 == 0:
        d //= 5
        k5 += 1
    k = max(k2, k5)
    m = a.numerator * (10**k) // a.denominator
    exp = -k
    while m % 10 == 0:
        m //= 10
        exp += 1
    r = exp % 3
    return m * 10**r, exp - r


# --- parsing -------------------------------------------------------------

def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """Upstream ``parseQuantityString``: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] == "+"
        pos += 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    num = s[start:pos] or "0"
    if pos >= end:
        return positive, s, num, "", ""
    denom = ""
    if s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
        if pos >= end:
            return positive, s, num, denom, ""
    value = s[:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, s[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """Upstream ``suffixHandler.interpret``: (base, exponent, format)."""
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _SIGNED_INT.fullmatch(suffix[1:]):
        parsed = int(suffix[1:])
        if -(2**63) <= parsed <= _MAX_INT64:
            exp32 = (parsed + 2**31) % 2**32 - 2**31  # Go's int32() conversion
            return 10, exp32, DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _takes_fast_path(num: str, denom: str, base: int, exponent: int) -> bool:
    """Whether upstream parses this with its int64 fast path (no inf.Dec)."""
    if base == 10:
        if 18 - (len(num) + len(denom)) < 0 or exponent - len(denom) < -9:
            return False
        return True
    if exponent < 0 or denom:
        return False
    precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    return precision >= 0 and int(num) << exponent <= _MAX_INT64


def parse_quantity(s: QuantityLike) -> Quantity:
    """Parse a quantity string (or int) exactly as upstream ``ParseQuantity``.

    Accepts ``str`` (``"100m"``, ``"1.5Gi"``, ``"1e3"``), ``int`` (DecimalSI),
    ``float`` (read from its shortest ``repr``, as a JSON/YAML number would be
    read from its text) or an existing :class:`Quantity` (returned as is).

    Raises:
        ValueError: with upstream's message: ``quantities must match the regular
            expression '...'``, ``unable to parse quantity's suffix`` or
            ``unable to parse numeric part of quantity``.
        TypeError: for any other input type (including ``bool``).
    """
    if isinstance(s, Quantity):
        return s
    if isinstance(s, bool):
        raise TypeError("a quantity cannot be a boolean")
    if isinstance(s, int):
        return Quantity(Fraction(s), DECIMAL_SI)
    if isinstance(s, float):
        s = repr(s)
    if not isinstance(s, str):
        raise TypeError(f"cannot parse a quantity from {type(s).__name__}")
    return _parse_text(s)


@functools.lru_cache(maxsize=4096)
def _parse_text(s: str) -> Quantity:
    """:func:`parse_quantity` of a string, remembered (a cluster's objects repeat a few
    dozen quantities; each parse costs ~90 µs of Fraction arithmetic). Errors are not
    remembered: they are raised again on every call."""
    if s == "":
        raise ValueError(ERR_FORMAT_WRONG)
    if s == "0":
        return Quantity(Fraction(0), DECIMAL_SI)

    positive, value, num, denom, suffix = _scan(s)
    base, exponent, fmt = _interpret(suffix)

    if not any(c in _DIGITS for c in value) and not _takes_fast_path(num, denom, base, exponent):
        raise ValueError(ERR_NUMERIC)  # inf.Dec cannot read "." or "-."
    if abs(exponent) > _MAX_EXPONENT:
        if exponent > 0 or int(num + denom) == 0:
            if exponent > 0:
                raise ValueError(ERR_NUMERIC)
            mag = Fraction(0)
        else:
            mag = Fraction(1, _NANO)
    else:
        mag = Fraction(int(num + denom), 10 ** len(denom))
        mag *= Fraction(base) ** exponent

    scaled = mag * _NANO
    if scaled.denominator != 1:  # round non-zero values up to the nearest 1n
        mag = Fraction(-(-scaled.numerator // scaled.denominator), _NANO)
    if fmt == BINARY_SI and mag > _MAX_INT64:
        mag = Fraction(_MAX_INT64)
    if fmt == BINARY_SI and 0 < mag < 1:
        fmt = DECIMAL_SI
    return Quantity(mag if positive else -mag, fmt)


def cpu_millis(s: QuantityLike) -> int:
    """CPU in millicores, rounded up (away from zero): ``"250m"`` -> 250, ``"1.0001"`` -> 1001.

    Raises ValueError as :func:`parse_quantity`.
    """
    return parse_quantity(s).milli_value()


def bytes_value(s: QuantityLike) -> int:
    """A byte (or plain count) quantity as an int, rounded up: ``"1Gi"`` -> 1073741824.

    Raises ValueError as :func:`parse_quantity`.
    """
    return parse_quantity(s).int_value()
