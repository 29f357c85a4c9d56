"""Kubernetes quantities in the REST API (issue 26): "500m", "2", "16Gi" in, the same back.

Parsed by the scheduler's one parser (`scheduler.quantity`); a field stores whole millicores
(CPU) or bytes (memory, issue 33) and shows them as Kubernetes writes them ("500m", "16Gi",
"50M"). A bad value is a 400 under its field that says what the field takes. The numbers the API
has always answered beside them (`memory_mib`, ...) stay in MiB for existing clients
(:class:`MibField`).

What a field takes is Kubernetes' syntax narrowed to what a portal user writes, so that the
OpenAPI schema states it exactly (a pattern, not prose) and every value it allows fits the
database's integer columns: CPU as cores ("2", "0.5", up to 999,999) or millicores ("500m"), or a
JSON number of cores; memory in every form Kubernetes takes (issue 33: a bare "2000" is bytes,
"50M", "1.5Gi", "500m", "1e3"), as a string or a JSON number of bytes, up to 2**62 bytes. Only a
fraction of a byte rounds (up).
"""

from __future__ import annotations

import re

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from scheduler.quantity import (
    MIB,
    QuantityError,
    cpu_millis,
    format_cpu,
    format_memory,
    memory_bytes,
    mib_ceil,
)

CPU_CORES_MAX = 999_999
CPU_PATTERN = r"^([0-9]{1,6}(\.[0-9]{1,3})?|\.[0-9]{1,3}|[0-9]{1,9}m)$"
# Kubernetes' quantity syntax (scheduler/quantity.py) in a JSON Schema (ECMA) regex
MEMORY_PATTERN = (
    r"^\s*[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\s*$"
)
MEMORY_MAX = 2**62
# the same, more than zero (JSON Schema's ECMA regexes have lookaheads too)
GPU_MEMORY_PATTERN = r"^(?!\s*[+]?0*\.?0*([eE][+-]?[0-9]+|[A-Za-z]+)?\s*$)" + MEMORY_PATTERN[1:]
CPU_WORDS = "a CPU quantity (cores, e.g. 2 or 500m)"
MEMORY_WORDS = "a memory quantity (bytes or a number with a unit, e.g. 16Gi, 512Mi, 50M, 2000)"


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
            except QuantityError as error:  # too large: the message says so
                raise serializers.ValidationError(str(error)) from None
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
    """Memory in bytes: "16Gi", "512Mi", "50M", "2000", 2000 (a JSON number is bytes, as a
    bare number in Kubernetes); shown as "16Gi", "1536Mi" or "50M"."""

    pattern = re.compile(MEMORY_PATTERN)
    words = MEMORY_WORDS
    request_schema = {"oneOf": [
        {"type": "string", "pattern": MEMORY_PATTERN, "example": "16Gi"},
        {"type": "integer", "minimum": 0, "maximum": MEMORY_MAX, "example": 2000},
    ]}  # fmt: skip
    example = "16Gi"

    def to_internal_value(self, data) -> int:
        if isinstance(data, int) and not isinstance(data, bool) and 0 <= data <= MEMORY_MAX:
            return data
        return super().to_internal_value(data)

    def parse(self, data: str) -> int:
        return memory_bytes(data)

    def to_representation(self, value) -> str:
        return format_memory(value)


class GpuMemoryField(MemoryField):
    """A fraction of a GPU by its memory (R5.5): more than 0. Never null in a request (leave it
    out to ask by `gpus`); an answer gives null for a job that asked by `gpus`."""

    pattern = re.compile(GPU_MEMORY_PATTERN)
    request_schema = {"oneOf": [
        {"type": "string", "pattern": GPU_MEMORY_PATTERN, "example": "20Gi"},
        {"type": "integer", "minimum": 1, "maximum": MEMORY_MAX, "example": 21474836480},
    ]}  # fmt: skip
    example = "20Gi"
    response_nullable = True

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> int:
        zero = isinstance(data, str) and not self.pattern.match(data)
        if (zero and MemoryField.pattern.match(data)) or data == 0:
            raise serializers.ValidationError("must be more than 0")
        return super().to_internal_value(data)


class MibField(serializers.ReadOnlyField):
    """A byte count as the whole MiB the API answered before issue 33 (`memory_mib`, ...), for
    the clients that read these numbers: a request rounded up, a node's allocatable (`floor`)
    down, as they were stored."""

    def __init__(self, *, floor: bool = False, **kwargs):
        self.floor = floor
        super().__init__(**kwargs)

    def to_representation(self, value) -> int | None:
        if value is None:
            return None
        return value // MIB if self.floor else mib_ceil(value)


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
