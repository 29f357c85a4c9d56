"""The one Kubernetes quantity parser of issue 26 (scheduler/quantity.py)."""

from fractions import Fraction

import pytest

from scheduler.quantity import (
    QuantityError,
    cores_text,
    cpu_millis,
    format_cpu,
    format_memory,
    memory_mib,
    memory_text,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("16Gi", 16 * 2**30),
        ("512Mi", 512 * 2**20),
        ("1Ki", 1024),
        ("1Ti", 2**40),
        ("1G", 10**9),
        ("100k", 100_000),
        ("1e3", 1000),
        ("2E-3", Fraction(2, 1000)),
        (" 4 ", 4),
        (3, 3),
        (0.25, Fraction(1, 4)),
    ],
)
def test_it_reads_kubernetes_quantity_syntax(text, value):
    assert parse_quantity(text) == value


def test_cpu_is_in_millicores_a_plain_number_being_cores():
    assert cpu_millis("500m") == 500
    assert cpu_millis("2") == 2000
    assert cpu_millis(0.25) == 250
    assert cpu_millis("0.1m") == 1  # a request rounds up to the millicore
    assert cpu_millis("0.1m", allocatable=True) == 0  # a node never offers more than it has


def test_memory_is_in_mib_a_plain_number_being_bytes():
    assert memory_mib("16Gi") == 16384
    assert memory_mib("512Mi") == 512
    assert memory_mib("1G") == 954
    assert memory_mib("1G", allocatable=True) == 953
    assert memory_mib(1) == 1
    assert memory_mib(0) == 0


@pytest.mark.parametrize("bad", ["abc", "", "1Gb", "1.2.3", "Gi", "--1", "1 Gi", True, None, [1]])
def test_it_refuses_what_is_not_a_quantity_saying_what_it_expects(bad):
    with pytest.raises(QuantityError, match="quantity"):
        cpu_millis(bad)


def test_it_refuses_negative_and_absurd_amounts_naming_the_resource():
    with pytest.raises(QuantityError, match="CPU cannot be negative"):
        cpu_millis("-1")
    with pytest.raises(QuantityError, match="Memory cannot be negative"):
        memory_mib("-1Gi")
    with pytest.raises(QuantityError, match="too large"):
        memory_mib("9e29")
    with pytest.raises(QuantityError, match="finite"):
        cpu_millis(float("inf"))


def test_amounts_are_written_back_as_kubernetes_writes_them_and_as_words():
    assert [format_cpu(m) for m in (500, 2000, 1250)] == ["500m", "2", "1250m"]
    assert [format_memory(m) for m in (16384, 1536, 2**20, 0)] == ["16Gi", "1536Mi", "1Ti", "0Mi"]
    assert cpu_millis(format_cpu(1250)) == 1250
    assert memory_mib(format_memory(1536)) == 1536
    assert [cores_text(m) for m in (16000, 1000, 500)] == ["16 cores", "1 core", "0.5 cores"]
    assert [memory_text(m) for m in (65536, 1536, 300)] == ["64 GiB", "1.5 GiB", "300 MiB"]
