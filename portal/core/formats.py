"""One spelling per quantity kind, for every page, the API's texts and the CSV (issue 34 item
11: a 20Gi GPU-memory request was 0.63, 0.62 and 0.625 on one page, "GPU-hours held 0.0" stood
beside 0.02, and "0 MiB" beside "0 cores").

- GPUs: at most two decimals, rounded half up, no trailing zeros ("0.63", "0.5", "16"): a
  fraction is asked in hundredths, and 20Gi of a 32 GiB device (0.625) is stored as 0.63.
- GPU-hours: always two decimals ("0.00", "0.02", "12.50"), so a column lines up and a short
  run is not "0.0".
- cores and memory: `scheduler.quantity`'s words ("0.5 cores", "1.5 GiB"); no memory is
  "0 GiB", in the unit of the amounts beside it.
- durations: "45 s", "12 min", "3 h 20 min", "2 d 4 h".

static/allot/page.js (`Allot.format`) spells the live pages' numbers by the same rules.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from scheduler.quantity import cores_text, memory_text

CENT = Decimal("0.01")


def _decimal(value) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))  # str: 0.625 stays 0.625, not 0.62499999...
    except InvalidOperation:
        return None


def gpus(value) -> str:
    """GPUs as a number: 0.625 -> "0.63", 0.5 -> "0.5", 16 -> "16"; an en dash for none."""
    number = _decimal(value)
    if number is None:
        return "\N{EN DASH}"
    text = f"{number.quantize(CENT, rounding=ROUND_HALF_UP):f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def gpus_text(value) -> str:
    """GPUs in words: "1 GPU", "0.63 GPU", "2 GPUs"."""
    text = gpus(value)
    return f"{text} GPU" if _decimal(text) is not None and _decimal(text) <= 1 else f"{text} GPUs"


def gpu_hours(value) -> str:
    """GPU-hours with two decimals: 0 -> "0.00", 0.0166 -> "0.02"."""
    number = _decimal(value)
    if number is None:
        return "\N{EN DASH}"
    return f"{number.quantize(CENT, rounding=ROUND_HALF_UP):f}"


def cores(millis) -> str:
    """Millicores in words: 16000 -> "16 cores", 500 -> "0.5 cores", 0 -> "0 cores"."""
    return cores_text(int(millis or 0))


def memory(size) -> str:
    """Bytes in words, exactly (issue 33): 64 GiB -> "64 GiB", 1.5 GiB -> "1.5 GiB", 50000000 ->
    "50 MB", 0 -> "0 GiB"."""
    size = int(size or 0)
    return memory_text(size) if size else "0 GiB"


def duration(seconds) -> str:
    """Seconds in plain words: 45 s, 12 min, 3 h 20 min, 2 d 4 h; "-" for none."""
    if seconds is None or seconds == "":
        return "-"
    total = max(0, round(float(seconds)))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"
