"""One spelling per quantity kind (issue 34 item 11): the rules of portal.core.formats, which
every page's filters use (the live pages' static/allot/format.js follows the same rules; the
browser test tests/browser/test_one_spelling.py holds them to it)."""

import pytest

from portal.core import formats


@pytest.mark.parametrize(("value", "text"), [
    (0.625, "0.63"), ("0.625", "0.63"), (0.62, "0.62"), (0.5, "0.5"), (16, "16"), (2.0, "2"),
    (0, "0"), (1.005, "1.01"), (None, "\N{EN DASH}"),
])  # fmt: skip
def test_gpus_have_at_most_two_decimals_rounded_half_up(value, text):
    assert formats.gpus(value) == text


def test_gpus_in_words():
    assert [formats.gpus_text(v) for v in (0.625, 1, 2)] == ["0.63 GPU", "1 GPU", "2 GPUs"]


@pytest.mark.parametrize(("value", "text"), [(0, "0.00"), (0.0166, "0.02"), (12.5, "12.50"),
                                             (0.005, "0.01")])  # fmt: skip
def test_gpu_hours_always_have_two_decimals(value, text):
    assert formats.gpu_hours(value) == text


def test_no_memory_is_in_the_unit_of_the_amounts_beside_it():
    assert (formats.memory(0), formats.memory(1536 * 2**20), formats.memory(300 * 2**20)) == (
        "0 GiB", "1.5 GiB", "300 MiB")  # fmt: skip
    assert (formats.cores(0), formats.cores(500), formats.cores(1000)) == (
        "0 cores", "0.5 cores", "1 core")  # fmt: skip
