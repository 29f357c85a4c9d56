"""Fair-share division (R2) checked against the rule book's worked numbers."""

from scheduler.fairshare import UNIT, Share, divide, divide_tree


def share(name, deserved, request, weight=None, limit=None, priority=100, order=0):
    return Share(
        name=name,
        deserved=None if deserved is None else deserved * UNIT,
        limit=None if limit is None else limit * UNIT,
        weight=float(deserved if weight is None else weight),
        request=round(request * UNIT),
        priority=priority,
        order=order,
    )


def shares(queues):
    return {q.name: q.fair_share / UNIT for q in queues}


def test_r2_10_seven_gpus_give_five_and_two_through_the_remainder():
    queues = [share("q0", 2, 5, weight=2, order=0), share("q1", 1, 3, weight=1, order=1)]
    divide(7 * UNIT, queues)
    assert shares(queues) == {"q0": 5, "q1": 2}


def test_r2_10_twelve_gpus_give_five_and_seven_in_a_second_round():
    queues = [share("q0", 2, 10, weight=1, order=0), share("q1", 2, 7, weight=2, order=1)]
    divide(12 * UNIT, queues)
    assert shares(queues) == {"q0": 5, "q1": 7}


def test_r2_7_a_queue_without_demand_gets_nothing_and_its_quota_is_redistributed():
    queues = [share("busy", 2, 8), share("idle", 6, 0)]
    divide(8 * UNIT, queues)
    assert shares(queues) == {"busy": 8, "idle": 0}


def test_e1_over_subscribed_quotas_still_give_each_queue_its_quota_up_to_demand():
    queues = [share("a", 6, 6), share("b", 6, 6)]
    left = divide(8 * UNIT, queues)
    assert shares(queues) == {"a": 6, "b": 6}
    assert left == 0


def test_e2_weight_zero_gets_no_over_quota_share():
    queues = [share("zero", 1, 8, weight=0), share("one", 1, 8, weight=1)]
    divide(8 * UNIT, queues)
    assert shares(queues) == {"zero": 1, "one": 7}


def test_e6_a_higher_priority_queue_is_satisfied_before_a_lower_one_gets_anything():
    queues = [share("low", 1, 8, priority=100), share("high", 1, 5, priority=200)]
    divide(8 * UNIT, queues)
    assert shares(queues) == {"low": 3, "high": 5}


def test_r2_5_the_limit_caps_the_over_quota_share():
    queues = [share("capped", 1, 8, limit=2), share("free", 1, 8)]
    divide(8 * UNIT, queues)
    assert shares(queues) == {"capped": 2, "free": 6}


def test_r2_9_equal_weights_split_the_spare_evenly_tr4858():
    queues = [
        share("a", 4, 4, order=0),
        share("b", 2, 4, order=1),
        share("c", 2, 4, order=2),
        share("d", 8, 6, order=3),
    ]
    divide(16 * UNIT, queues)
    assert shares(queues) == {"a": 4, "b": 3, "c": 3, "d": 6}


def test_r2_10_a_fractional_remainder_is_handed_out_last():
    queues = [share("a", 0, 0.5, weight=1, order=0), share("b", 0, 0.3, weight=1, order=1)]
    divide(1 * UNIT, queues)
    assert shares(queues) == {"a": 0.5, "b": 0.3}


def test_r2_11_a_department_divides_its_own_fair_share_among_its_projects():
    dept = share("dept", 4, 10, order=0)
    dept.children = [share("p1", 1, 5, order=1), share("p2", 1, 5, order=2)]
    other = share("other", 4, 10, order=3)
    divide_tree(8 * UNIT, [dept, other])
    assert shares([dept, other]) == {"dept": 4, "other": 4}
    assert shares(dept.children) == {"p1": 2, "p2": 2}


def test_e10_historical_usage_lowers_a_queues_round_weight():
    heavy = share("heavy", 0, 9, weight=1, order=0)
    light = share("light", 0, 9, weight=1, order=1)
    heavy.usage = 0.5  # w' = 0.5 + 1 x (0.5 - 0.5) = 0.5; light: 0.5 + 1 x (0.5 - 0) = 1.0
    divide(9 * UNIT, [heavy, light], k_value=1.0)
    assert shares([heavy, light]) == {"heavy": 3, "light": 6}


def test_e10_without_usage_data_the_round_weight_is_just_the_weight():
    a, b = share("a", 0, 9, weight=1, order=0), share("b", 0, 9, weight=2, order=1)
    divide(9 * UNIT, [a, b], k_value=1.0)
    assert shares([a, b]) == {"a": 3, "b": 6}
