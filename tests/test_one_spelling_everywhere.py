"""Issue 34 item 11: one spelling per quantity kind on the pages, the API's texts, the command line,
the CSV and the simulated logs. The command line and the agents import nothing of the portal, so
each keeps its own copy of the rule; this test holds the copies equal to `portal.core.formats`."""

from __future__ import annotations

import pytest

from agents.simulated import share_text
from cli import tables
from portal.core import formats

SHARES = [0.625, 0.5, 0.125, 0.375, 0.005, 0.015, 0.995, 0.01, 0.33, 2.675, 0.1 + 0.2]


@pytest.mark.parametrize("value", [*SHARES, 1, 16, 0, 3.5, 7.125])
def test_the_command_line_spells_gpus_and_gpu_hours_as_the_pages(value):
    assert tables.gpus(value) == formats.gpus(value)
    assert tables.gpu_hours(value) == formats.gpu_hours(value)


@pytest.mark.parametrize("value", SHARES)
def test_a_simulated_log_line_spells_a_share_as_the_pages(value):
    assert share_text(value) == formats.gpus(value)


def test_a_share_of_20gi_of_a_32gi_device_is_063_everywhere():
    """The issue's case: 0.63 on the page, 0.62 in the event, 0.625 in the CLI."""
    from portal.scheduling.commit import describe_placement
    from scheduler import PodPlacement

    assert describe_placement([PodPlacement("dgx1-1", (3,), 0.625)]) == "dgx1-1 GPU 3 (0.63)"
    assert (tables.gpus(0.625), share_text(0.625), formats.gpus(0.625)) == ("0.63",) * 3
