"""Kubernetes resource quantities: one parser for CPU, memory and GPU memory (issue 26).

The syntax is Kubernetes' ``resource.Quantity``: a decimal number (sign, digits, an optional
fraction) followed by a binary suffix (``Ki Mi Gi Ti Pi Ei``, powers of 1024), a decimal suffix
(``n u m k M G T P E``, powers of 1000; ``m`` is a thousandth) or a decimal exponent (``1e3``).
A plain number is cores for CPU and bytes for memory, as in Kubernetes.

The core counts CPU in millicores and memory in bytes (integers, so sums are exact, like GPUs in
thousandths, scheduler/model.py), the units Kubernetes itself compares (issue 33: counted in MiB,
a pod of `50M` rounded up and a node of `200M` down, so four such pods did not fit where
Kubernetes places them). Only what is finer than the unit rounds: a request *up* ("0.1m" CPU is
1 millicore, "0.5" bytes is 1 byte, as Kubernetes' `Quantity.Value()`), a node's allocatable
*down* (a node never offers more than it has).
Every error is a :class:`QuantityError` (a ``ValueError``) whose message says what was given and
what is expected, so the portal can show it under the field as it is.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = [
    "QuantityError",
    "cores_text",
    "cpu_millis",
    "format_cpu",
    "format_memory",
    "memory_bytes",
    "memory_text",
    "mib_ceil",
    "parse_quantity",
]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_SYNTAX = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?$"
)
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity, or not one allowed here (negative, too big)."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity ("500m" -> 1/2, "16Gi" -> 17179869184).

    Numbers (int or float, e.g. from JSON) are taken as they are. Raises :class:`QuantityError`
    for anything else, including booleans, NaN and infinities.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity (e.g. 500m, 2, 16Gi)")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Fraction(value).limit_denominator(10**9)
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity (e.g. 500m, 2, 16Gi)")
    text = value.strip()
    match = _SYNTAX.match(text)
    if match is None or len(text) > 64:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (a number with an optional suffix: "
            "m, k, M, G, T, Ki, Mi, Gi, Ti; e.g. 500m, 2, 16Gi)"
        )
    number = Fraction(match["number"])
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > 30:
            raise QuantityError(f"{value!r}: the exponent is out of range")
        return number * Fraction(10) ** exponent
    suffix = match["suffix"] or ""
    return number * (_BINARY.get(suffix) or _DECIMAL[suffix])


def _non_negative(value: str | int | float, what: str) -> Fraction:
    amount = parse_quantity(value)
    if amount < 0:
        raise QuantityError(f"{what} cannot be negative (got {value!r})")
    if amount > 2**62:
        raise QuantityError(f"{what} {value!r} is too large")
    return amount


def cpu_millis(value: str | int | float, *, allocatable: bool = False) -> int:
    """CPU in millicores: "500m" -> 500, "2" or 2 -> 2000, 0.25 -> 250 (a plain number is
    cores). A request rounds up to the millicore, an `allocatable` amount down."""
    amount = _non_negative(value, "CPU") * 1000
    return math.floor(amount) if allocatable else math.ceil(amount)


def memory_bytes(value: str | int | float, *, allocatable: bool = False) -> int:
    """Memory in bytes: "16Gi" -> 17179869184, "50M" -> 50000000, "2000" or 2000 -> 2000 (a
    plain number is bytes, as in Kubernetes). Only a fraction of a byte rounds: a request up, an
    `allocatable` amount down."""
    amount = _non_negative(value, "Memory")
    return math.floor(amount) if allocatable else math.ceil(amount)


def mib_ceil(size: int) -> int:
    """Bytes as the whole MiB the REST API has always answered for a request ("1G" -> 954)."""
    return -(-size // MIB)


_SUFFIXES = (
    ("Ei", 2**60), ("Pi", 2**50), ("Ti", TIB), ("Gi", GIB), ("Mi", MIB), ("Ki", KIB),
    ("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3),
)  # fmt: skip


def format_cpu(millis: int) -> str:
    """Millicores as Kubernetes writes them: 2000 -> "2", 500 -> "500m"."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def format_memory(size: int) -> str:
    """Bytes exactly, with the largest suffix that divides them, binary first: 16 GiB -> "16Gi",
    1.5 GiB -> "1536Mi", 50000000 -> "50M", 2000 -> "2k", 1001 -> "1001", 0 -> "0"."""
    for suffix, unit in _SUFFIXES:
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def cores_text(millis: int) -> str:
    """Millicores in words for reasons: 16000 -> "16 cores", 1000 -> "1 core", 500 -> "0.5
    cores"."""
    cores = millis / 1000
    shown = f"{cores:g}" if millis % 1000 else str(millis // 1000)
    return f"{shown} core" if millis == 1000 else f"{shown} cores"


def memory_text(size: int) -> str:
    """Bytes in words for reasons: 64 GiB -> "64 GiB", 1.5 GiB -> "1.5 GiB", 300 MiB -> "300
    MiB"; an amount that is not a round number of binary units is said in the decimal ones a
    Kubernetes user wrote ("200 MB", "1.5 GB"), so a node of 200M is not shown as 190.73 MiB.
    In the largest unit it reaches, to two decimals; exact when either system allows it.
    Nothing is "0 MiB", as reasons have always said it ("0 MiB in use")."""
    if size == 0:
        return "0 MiB"
    binary = _in_words(size, ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")))
    decimal = _in_words(size, ((10**9, "GB"), (10**6, "MB"), (10**3, "kB")))
    return decimal[0] if decimal[1] and not binary[1] else binary[0]


def _in_words(size: int, units: tuple[tuple[int, str], ...]) -> tuple[str, bool]:
    """`size` in the largest of `units` it reaches (else bytes), and whether that is exact."""
    for unit, name in units:
        if size >= unit:
            shown = f"{size / unit:.2f}".rstrip("0").rstrip(".")
            return f"{shown} {name}", (size * 100) % unit == 0
    return f"{size} bytes", True
