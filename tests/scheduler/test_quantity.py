"""The one Kubernetes quantity parser of issue 26 (scheduler/quantity.py)."""

from fractions import Fraction

import pytest

from scheduler.quantity import (
    QuantityError,
    cores_text,
    cpu_millis,
    format_cpu,
    format_memory,
    memory_bytes,
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


def test_memory_is_in_bytes_exactly_a_plain_number_being_bytes():
    # issue 33: MiB rounded "1G" up to 954 MiB for a request and down to 953 for a node
    assert memory_bytes("16Gi") == 16 * 2**30
    assert memory_bytes("512Mi") == 512 * 2**20
    assert memory_bytes("1G") == memory_bytes("1G", allocatable=True) == 10**9
    assert memory_bytes("50M") * 4 == memory_bytes("200M", allocatable=True)
    assert memory_bytes(1) == 1
    assert memory_bytes(0) == 0
    assert memory_bytes("0.5") == 1  # a fraction of a byte: a request rounds up, as Kubernetes
    assert memory_bytes("0.5", allocatable=True) == 0


@pytest.mark.parametrize(
    ("form", "size"),
    [("2000", 2000), (2000, 2000), ("50M", 50 * 10**6), ("1.5Gi", 3 * 2**29), ("500m", 1),
     ("1e3", 1000), ("1.5e3", 1500), ("64G", 64 * 10**9), ("2k", 2000), ("1Ki", 1024)],
)  # fmt: skip
def test_every_kubernetes_form_is_a_memory_quantity(form, size):
    assert memory_bytes(form) == size


@pytest.mark.parametrize("bad", ["abc", "", "1Gb", "1.2.3", "Gi", "--1", "1 Gi", True, None, [1]])
def test_it_refuses_what_is_not_a_quantity_saying_what_it_expects(bad):
    with pytest.raises(QuantityError, match="quantity"):
        cpu_millis(bad)


def test_it_refuses_negative_and_absurd_amounts_naming_the_resource():
    with pytest.raises(QuantityError, match="CPU cannot be negative"):
        cpu_millis("-1")
    with pytest.raises(QuantityError, match="Memory cannot be negative"):
        memory_bytes("-1Gi")
    with pytest.raises(QuantityError, match="too large"):
        memory_bytes("9e29")
    with pytest.raises(QuantityError, match="finite"):
        cpu_millis(float("inf"))


def test_amounts_are_written_back_as_kubernetes_writes_them_and_as_words():
    assert [format_cpu(m) for m in (500, 2000, 1250)] == ["500m", "2", "1250m"]
    sizes = (16 * 2**30, 1536 * 2**20, 2**40, 0, 50 * 10**6, 2000, 1001)
    shown = ["16Gi", "1536Mi", "1Ti", "0", "50M", "2k", "1001"]
    assert [format_memory(m) for m in sizes] == shown
    assert cpu_millis(format_cpu(1250)) == 1250
    for size in (1536 * 2**20, 50 * 10**6, 2000, 1001, 3 * 2**29):
        assert memory_bytes(format_memory(size)) == size
    assert [cores_text(m) for m in (16000, 1000, 500)] == ["16 cores", "1 core", "0.5 cores"]
    sizes = (64 * 2**30, 3 * 2**29, 300 * 2**20, 50 * 10**6, 1536, 1001, 10**9 + 1)
    assert [memory_text(m) for m in sizes] == [
        "64 GiB",
        "1.5 GiB",
        "300 MiB",
        "50 MB",
        "1.5 KiB",
        "1001 bytes",
        "953.67 MiB",
    ]
