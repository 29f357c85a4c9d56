"""The report's helpers: the allocation chart's time-weighted resampling keeps the area and
never invents a peak."""

import pytest

from scheduler_tools.simulate.report import resample


def test_resample_gives_time_weighted_bucket_means():
    # 10 GPUs from t3 to t7, buckets of 2 s: [0,2) 0, [2,4) 5, [4,6) 10, [6,8) 5, [8,10) 0.
    times, values = resample([(0, 0), (3, 10), (7, 0)], end=10, buckets=5)
    assert times == [1, 3, 5, 7, 9]
    assert values == [0, 5, 10, 5, 0]


def test_resample_keeps_the_area_and_the_ceiling_for_many_small_steps():
    series = [(0.0, 0)] + [(i * 0.1, (i * 37) % 11) for i in range(1, 10_000)]
    end = 1000.0
    _, values = resample(series, end, buckets=300)
    width = end / 300
    area = sum(v * width for v in values)
    exact = sum(v * (series[i + 1][0] - t) for i, (t, v) in enumerate(series[:-1]))
    exact += series[-1][1] * (end - series[-1][0])
    assert area == pytest.approx(exact)
    assert max(values) <= 10 + 1e-9
