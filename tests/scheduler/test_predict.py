"""The run-time predictor (scheduler.predict): group fallbacks, min_samples, the user's estimate,
the quantile, the sample window, and evaluate() on a tiny trace with exact numbers."""

import math

import pytest

from scheduler.predict import (
    Bursts,
    EvalJob,
    Prediction,
    Predictor,
    Running,
    evaluate,
    quantile,
)


def learn_many(predictor, user, project, image, gpus, durations):
    for duration in durations:
        predictor.learn(user, project, image, gpus, duration)


def test_most_specific_group_wins_over_the_project_group():
    predictor = Predictor()
    learn_many(predictor, "u1", "p", "img", 1, [10, 20, 30])
    learn_many(predictor, "u2", "p", "img", 1, [1000, 2000, 3000])
    mine = predictor.predict("u1", "p", "img", 1)
    assert (mine.seconds, mine.basis) == (20, "user+project+image+gpus")
    # A user with no history falls to project+gpus: median of all six = (30 + 1000) / 2.
    stranger = predictor.predict("u3", "p", "img", 1)
    assert (stranger.seconds, stranger.basis) == (515, "project+gpus")


@pytest.mark.parametrize(
    ("learned", "asked", "basis"),
    [
        (("u1", "p", "img", 1), ("u1", "p", "img", 1), "user+project+image+gpus"),
        (("u1", "q", "other", 1), ("u1", "p", "img", 1), "user+gpus"),
        (("u2", "p", "other", 1), ("u1", "p", "img", 1), "project+gpus"),
        (("u2", "p", "img", 4), ("u1", "p", "img", 1), "project"),
        (("u2", "q", "img", 1), ("u1", "p", "img", 1), "gpus"),
        (("u2", "q", "img", 4), ("u1", "p", "img", 1), "everyone"),
    ],
)
def test_fallback_goes_from_most_to_least_specific_group(learned, asked, basis):
    predictor = Predictor()
    learn_many(predictor, *learned, [100, 200, 400])
    prediction = predictor.predict(*asked)
    assert (prediction.seconds, prediction.basis) == (200, basis)


def test_empty_history_gives_the_default():
    prediction = Predictor(default_s=1234).predict("u", "p", "i", 1)
    assert (prediction.seconds, prediction.basis) == (1234, "default")


def test_unknown_user_and_image_skip_the_groups_that_need_them():
    predictor = Predictor()
    learn_many(predictor, "", "p", "", 1, [5, 6, 7])
    assert ("", "p", "", 1) not in {key[1] for key in predictor.groups}
    assert predictor.predict("", "p", "", 1).basis == "project+gpus"


def test_min_samples_decides_whether_a_group_is_used():
    predictor = Predictor(min_samples=3)
    learn_many(predictor, "u1", "p", "img", 1, [10, 20])
    learn_many(predictor, "u2", "p", "img", 1, [100])
    assert predictor.predict("u1", "p", "img", 1).basis == "project+gpus"
    assert predictor.predict("u1", "p", "img", 1).seconds == 20  # median of 10, 20, 100
    relaxed = Predictor(min_samples=2)
    learn_many(relaxed, "u1", "p", "img", 1, [10, 20])
    assert relaxed.predict("u1", "p", "img", 1) == relaxed.history("u1", "p", "img", 1)
    assert relaxed.predict("u1", "p", "img", 1).seconds == 15


def test_user_estimate_is_an_upper_bound_history_may_lower():
    predictor = Predictor()
    learn_many(predictor, "u1", "p", "img", 1, [10, 20, 30])
    lower = predictor.predict("u1", "p", "img", 1, estimate_s=15)
    assert (lower.seconds, lower.basis) == (15, "estimate")
    higher = predictor.predict("u1", "p", "img", 1, estimate_s=50)
    assert (higher.seconds, higher.basis) == (20, "user+project+image+gpus")
    no_history = Predictor().predict("u1", "p", "img", 1, estimate_s=50)
    assert (no_history.seconds, no_history.basis) == (50, "estimate")


def test_quantile_is_configurable_and_interpolates():
    assert quantile([10, 20, 30], 0.9) == pytest.approx(28)
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    predictor = Predictor(quantile=0.9)
    learn_many(predictor, "u", "p", "i", 1, [10, 20, 30])
    assert predictor.predict("u", "p", "i", 1).seconds == pytest.approx(28)
    with pytest.raises(ValueError):
        Predictor(quantile=1.5)


def test_window_keeps_only_the_most_recent_samples_per_group():
    predictor = Predictor(window=3)
    learn_many(predictor, "u", "p", "i", 1, [1000, 10, 20, 30])  # 1000 is dropped
    assert predictor.predict("u", "p", "i", 1).seconds == 20
    assert predictor.groups[("everyone", ())].sorted == [10, 20, 30]


TRACE = [
    EvalJob(0, 100, "p", 1),
    EvalJob(10, 200, "p", 1),
    EvalJob(20, 300, "p", 1),
    EvalJob(1000, 150, "p", 1),
    EvalJob(1100, 500, "p", 1),
    EvalJob(1200, 90, "q", 1),
]


def test_evaluate_online_learns_each_job_at_its_completion():
    # Train: the first 3 jobs (finished by 320 s). j3 at 1000: project+gpus median(100, 200,
    # 300) = 200, error 50, 200/150 within 2x. j4 at 1100: j3 ends at 1150, not yet learned:
    # 200 again, error 300, 0.4 not within. j5 (project q) at 1200: j3 learned, gpus group
    # (100, 150, 200, 300) -> 175, error 85, 175/90 = 1.94 within.
    result = evaluate(TRACE, train_fraction=0.5, online=True)
    assert result.n == 3
    assert result.train == 3
    assert result.mae_s == pytest.approx((50 + 300 + 85) / 3)
    assert result.within_2x == pytest.approx(2 / 3)
    assert result.by_basis == {"project+gpus": 2, "gpus": 1}


def test_evaluate_offline_learns_only_the_training_part():
    # j5 now sees only (100, 200, 300): 200 for 90 s is 2.2x, not within; error 110.
    result = evaluate(TRACE, train_fraction=0.5, online=False)
    assert result.mae_s == pytest.approx((50 + 300 + 110) / 3)
    assert result.within_2x == pytest.approx(1 / 3)


# ---------------------------------------------------------------- jobs still running (censoring)


def running(ran_s, project="p", gpus=1, user="", image=""):
    return Running(user, project, image, gpus, ran_s)


def test_running_jobs_count_as_longer_than_their_run_so_far():
    # Finished 10, 20, 30, 40; running for 35 and 100 s. Kaplan-Meier: at 10 six at risk (5/6
    # still run), at 20 five (x 4/5 = 4/6), at 30 four (x 3/4 = 1/2): the median is 30, where
    # the finished jobs alone say 25.
    predictor = Predictor()
    learn_many(predictor, "", "p", "", 1, [10, 20, 30, 40])
    assert predictor.predict("", "p", "", 1).seconds == 25
    predictor.running([running(35), running(100)])
    assert predictor.predict("", "p", "", 1) == Prediction(30, "project+gpus")
    # A running job leaves the risk set before any duration longer than its run so far (5 s
    # tells nothing about 10 s): four at risk at 10, S = 3/4, then 1/2 at 20.
    predictor.running([running(5)])
    assert predictor.predict("", "p", "", 1).seconds == 20
    # Running jobs of another group change nothing here.
    predictor.running([running(1000, project="q")])
    assert predictor.predict("", "p", "", 1).seconds == 25


def test_when_most_jobs_still_run_the_prediction_is_the_longest_run_seen():
    # One finished (10 s) and three running (50, 60, 70 s): at most a quarter finished, the
    # median is beyond every finished duration - the longest run seen is a lower bound.
    predictor = Predictor(min_samples=1)
    predictor.learn("", "p", "", 1, 10)
    predictor.running([running(50), running(60), running(70)])
    assert predictor.predict("", "p", "", 1).seconds == 70


def test_running_replaces_the_jobs_running_before_and_learning_updates_the_curve():
    predictor = Predictor()
    learn_many(predictor, "", "p", "", 1, [10, 20, 30, 40])
    predictor.running([running(35), running(100)])
    assert predictor.predict("", "p", "", 1).seconds == 30
    predictor.learn("", "p", "", 1, 35)  # the job that ran 35 s finished then
    predictor.running([running(100)])
    # 10, 20, 30, 35, 40 and one running 100: S = 5/6, 4/6, 3/6 at 30.
    assert predictor.predict("", "p", "", 1).seconds == 30
    predictor.running([])
    assert predictor.predict("", "p", "", 1).seconds == 30  # plain median of five


def test_outlook_is_the_run_left_given_how_long_the_job_has_run():
    # Finished 10, 20, 30, 40 and nothing running: S = 3/4, 1/2, 1/4, 0. A fresh job: 20 s. A
    # job 15 s in: S(15) = 3/4, half of it is 3/8, reached at 30 -> 15 s left. A job past every
    # finished duration has outlived the group: None.
    predictor = Predictor()
    learn_many(predictor, "", "p", "", 1, [10, 20, 30, 40])
    assert predictor.outlook("", "p", "", 1, 0) == 20
    assert predictor.outlook("", "p", "", 1, 15) == 15
    assert predictor.outlook("", "p", "", 1, 30) == 10  # S(30) = 1/4, S(40) = 0
    assert predictor.outlook("", "p", "", 1, 45) is None
    # As `Job.expected_end` on a clock at 100: the end, or infinity for no predictable end.
    assert predictor.expected_end("", "p", "", 1, 15, now=100) == 115
    assert predictor.expected_end("", "p", "", 1, 45, now=100) == math.inf
    # Running jobs count: with 35 and 100 s running, S(40) = 1/4, so 15 s in -> 25 s left
    # (S(15) = 5/6, half is 5/12, first reached at 40), and 45 s in nothing finished beyond.
    predictor.running([running(35), running(100)])
    assert predictor.outlook("", "p", "", 1, 15) == 25
    assert predictor.outlook("", "p", "", 1, 45) is None


def test_outlook_with_an_estimate_and_without_history():
    predictor = Predictor(default_s=3600)
    assert predictor.outlook("", "p", "", 1, 1000) == 2600  # the default, less the run so far
    assert predictor.outlook("", "p", "", 1, 5000) == 0  # past the default: any moment
    learn_many(predictor, "", "p", "", 1, [10, 20, 30, 40])
    # The user's estimate bounds the run left while the job is within it ...
    assert predictor.outlook("", "p", "", 1, 15, estimate_s=20) == 5
    assert predictor.outlook("", "p", "", 1, 45, estimate_s=100) == 55
    # ... and once past it, history speaks alone.
    assert predictor.outlook("", "p", "", 1, 15, estimate_s=10) == 15


def test_bursts_chain_jobs_of_one_shape_submitted_within_the_gap():
    bursts = Bursts(gap_s=60)
    assert bursts.assign("u", "p", "img", 1, 0, "a") == "a"
    assert bursts.assign("u", "p", "img", 1, 50, "b") == "a"
    assert bursts.assign("u", "p", "img", 1, 110, "c") == "a"  # 60 s after b: still chained
    assert bursts.assign("u", "p", "img", 2, 111, "d") == "d"  # other GPUs: its own burst
    assert bursts.assign("v", "p", "img", 1, 112, "e") == "e"  # another user
    assert bursts.assign("u", "p", "other", 1, 113, "f") == "f"  # another image
    assert bursts.assign("u", "p", "img", 1, 171, "g") == "g"  # 61 s after c: a new burst
    with pytest.raises(ValueError, match="gap_s"):
        Bursts(gap_s=-1)


def test_one_finished_job_of_a_burst_predicts_the_rest_before_any_other_group():
    predictor = Predictor(min_samples=3)
    learn_many(predictor, "u", "p", "img", 1, [1000, 2000, 3000])
    assert predictor.predict("u", "p", "img", 1, burst="s0").basis == "user+project+image+gpus"
    predictor.learn("u", "p", "img", 1, 40, burst="s0")
    assert predictor.predict("u", "p", "img", 1, burst="s0") == Prediction(40, "burst")
    # The burst's running jobs count as well (Kaplan-Meier): one ended at 40 s and two have
    # run 500 s, so at most a third ended - the longest run seen, 500 s.
    predictor.running(
        [Running("u", "p", "img", 1, 500, "s0"), Running("u", "p", "img", 1, 500, "s0")]
    )
    assert predictor.predict("u", "p", "img", 1, burst="s0") == Prediction(500, "burst")
    assert predictor.outlook("u", "p", "img", 1, 500, burst="s0") is None  # outlived its burst
    # A burst's name is only unique inside its project.
    assert predictor.predict("u", "q", "img", 1, burst="s0").basis != "burst"


@pytest.mark.parametrize(
    ("gap", "errors", "bases"),
    [(60, [3590, 2, 0], {"default": 1, "burst": 2}), (None, [3590, 3588, 3589], {"default": 3})],
)
def test_evaluate_predicts_from_a_bursts_jobs_finished_before_submission(gap, errors, bases):
    # a (t0, 10 s), b (t30, 12 s), c (t60, 11 s): one burst, each 30 s after the one before.
    # b is predicted from a (ended at t10): 10 s; c from a and b (b ended at t42): the median,
    # 11 s. Without bursts two finished jobs are too few for any group: the default, 3600 s.
    jobs = [EvalJob(0, 10, "p", 1), EvalJob(30, 12, "p", 1), EvalJob(60, 11, "p", 1)]
    result = evaluate(jobs, train_fraction=0, burst_gap_s=gap)
    assert result.mae_s == pytest.approx(sum(errors) / 3)
    assert result.by_basis == bases
