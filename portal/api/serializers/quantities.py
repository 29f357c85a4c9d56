"""Kubernetes quantities in the REST API (issue 26): "500m", "2", "16Gi" in, the same back.

Parsed by the scheduler's one parser (`scheduler.quantity`); a field stores whole millicores
(CPU) or MiB (memory) and shows them as Kubernetes writes them ("500m", "16Gi"). A bad value is a
400 under its field that says what the field takes.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduler.quantity import QuantityError, cpu_millis, format_cpu, format_memory, memory_mib

QUANTITY_MAX = 2**31 - 1  # the database's integer columns
CPU_WORDS = "a CPU quantity (cores, e.g. 2 or 500m)"
MEMORY_WORDS = "a memory quantity (bytes with a suffix, e.g. 16Gi or 512Mi)"


@extend_schema_field({"type": "string", "example": "500m", "nullable": True})
class QuantityField(serializers.Field):
    """A CPU (`kind="cpu"`, millicores) or memory (`kind="memory"`, MiB) quantity.

    Takes a string in Kubernetes' syntax or a JSON number (cores for CPU; for memory a plain
    number is bytes, as in Kubernetes, so a non-zero amount under 1 MiB is refused as a likely
    missing suffix). Shows the stored integer as Kubernetes writes it."""

    def __init__(self, kind: str, **kwargs):
        self.kind = kind
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> int:
        words = CPU_WORDS if self.kind == "cpu" else MEMORY_WORDS
        try:
            value = cpu_millis(data) if self.kind == "cpu" else memory_mib(data)
        except QuantityError as exc:
            if "too large" in str(exc):
                raise serializers.ValidationError(f"{data!r} is too large") from None
            raise serializers.ValidationError(f"{data!r} is not {words}") from None
        if value > QUANTITY_MAX:
            raise serializers.ValidationError(f"{data!r} is too large")
        if self.kind == "memory" and value == 1 and memory_mib(data, allocatable=True) == 0:
            raise serializers.ValidationError(
                f"{data!r} is less than 1Mi: a plain number is bytes; give a suffix, e.g. 16Gi"
            )
        return value

    def to_representation(self, value) -> str | None:
        if value is None:
            return None
        return format_cpu(value) if self.kind == "cpu" else format_memory(value)
