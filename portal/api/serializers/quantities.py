"""Kubernetes quantities in the REST API (issue 26): "500m", "2", "16Gi" in, the same back.

Parsed by the scheduler's one parser (`scheduler.quantity`); a field stores whole millicores
(CPU) or MiB (memory) and shows them as Kubernetes writes them ("500m", "16Gi"). A bad value is a
400 under its field that says what the field takes.

What a field takes is Kubernetes' syntax narrowed to what a portal user writes, so that the
OpenAPI schema states it exactly (a pattern, not prose) and every value it allows fits the
database's integer columns: CPU as cores ("2", "0.5", up to 999,999) or millicores ("500m"), or a
JSON number of cores; memory as a number with a unit (Ki, Mi, Gi, Ti or k, M, G, T: "16Gi",
"512Mi", "1.5G"), never a bare number, which Kubernetes reads as bytes (a `memory: 16` meant as
GiB would ask for 16 bytes). A request under one MiB holds one MiB.
"""

from __future__ import annotations

import re

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from scheduler.quantity import QuantityError, cpu_millis, format_cpu, format_memory, memory_mib

CPU_CORES_MAX = 999_999
CPU_PATTERN = r"^([0-9]{1,6}(\.[0-9]{1,3})?|\.[0-9]{1,3}|[0-9]{1,9}m)$"
# digits per unit so that the largest value stays under 2**31 MiB (the integer columns)
MEMORY_PATTERN = (
    r"^([0-9]{1,12}(\.[0-9]{1,3})?(Ki|k)|[0-9]{1,9}(\.[0-9]{1,3})?(Mi|M)"
    r"|[0-9]{1,6}(\.[0-9]{1,3})?(Gi|G)|[0-9]{1,3}(\.[0-9]{1,3})?(Ti|T))$"
)
# the same, more than zero (JSON Schema's ECMA regexes have lookaheads too)
GPU_MEMORY_PATTERN = r"^(?!0*\.?0*[A-Za-z]+$)" + MEMORY_PATTERN[1:]
CPU_WORDS = "a CPU quantity (cores, e.g. 2 or 500m)"
MEMORY_WORDS = "a memory quantity (a number with a unit, e.g. 16Gi or 512Mi)"


class _Quantity(serializers.Field):
    """A quantity stored as an integer: `pattern` says which strings, `parse` reads them."""

    pattern: re.Pattern
    words: str

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> int:
        if isinstance(data, str) and self.pattern.match(data):
            try:
                return self.parse(data)
            except QuantityError:
                pass  # the pattern is narrower than the parser: not reached
        raise serializers.ValidationError(f"{data!r} is not {self.words}")

    def parse(self, data: str) -> int:
        raise NotImplementedError


class CpuField(_Quantity):
    """CPU in millicores: "2" or 2 (cores), "0.5", "500m"; shown as "2" or "500m"."""

    pattern = re.compile(CPU_PATTERN)
    words = CPU_WORDS
    request_schema = {"oneOf": [
        {"type": "string", "pattern": CPU_PATTERN, "example": "500m"},
        {"type": "number", "minimum": 0, "maximum": CPU_CORES_MAX, "example": 2},
    ]}  # fmt: skip
    example = "500m"

    def to_internal_value(self, data) -> int:
        number = isinstance(data, int | float) and not isinstance(data, bool)
        if number and 0 <= data <= CPU_CORES_MAX:
            return cpu_millis(data)
        return super().to_internal_value(data)

    def parse(self, data: str) -> int:
        return cpu_millis(data)

    def to_representation(self, value) -> str:
        return format_cpu(value)


class MemoryField(_Quantity):
    """Memory in MiB: "16Gi", "512Mi", "1.5G"; shown as "16Gi" or "1536Mi"."""

    pattern = re.compile(MEMORY_PATTERN)
    words = MEMORY_WORDS
    request_schema = {"type": "string", "pattern": MEMORY_PATTERN, "example": "16Gi"}
    example = "16Gi"

    def parse(self, data: str) -> int:
        return memory_mib(data)

    def to_representation(self, value) -> str:
        return format_memory(value)


class GpuMemoryField(MemoryField):
    """A fraction of a GPU by its memory (R5.5): more than 0. Never null in a request (leave it
    out to ask by `gpus`); an answer gives null for a job that asked by `gpus`."""

    pattern = re.compile(GPU_MEMORY_PATTERN)
    request_schema = {"type": "string", "pattern": GPU_MEMORY_PATTERN, "example": "20Gi"}
    example = "20Gi"
    response_nullable = True

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> int:
        zero = isinstance(data, str) and not self.pattern.match(data)
        if zero and MemoryField.pattern.match(data):
            raise serializers.ValidationError("must be more than 0")
        return super().to_internal_value(data)


def QuantityField(kind: str, **kwargs) -> _Quantity:
    """The CPU (`kind="cpu"`) or memory (`kind="memory"`) field."""
    return CpuField(**kwargs) if kind == "cpu" else MemoryField(**kwargs)


class QuantitySchema(OpenApiSerializerFieldExtension):
    """The schema of a quantity field: in a request, the pattern (or number) it takes; in an
    answer, the string Kubernetes writes, which may be longer ("1536Mi") than what is taken."""

    target_class = _Quantity
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction) -> dict:
        field = self.target
        schema = dict(field.request_schema) if direction == "request" else {
            "type": "string", "example": field.example}  # fmt: skip
        nullable = field.allow_null or (
            direction == "response" and getattr(field, "response_nullable", False)
        )
        return {**schema, "nullable": True} if nullable else schema
