"""Reservations in the simulator (issue 37, R22): the engine hands each booked occurrence to
every cycle until its end and runs a cycle at each slot's start, so a trace replays R22.2 (work
that would overrun T1 held back), R22.3 (the project served at T1) as the portal does; and the
booking study's slot jobs and report."""

from dataclasses import replace

from scheduler.model import Reservation
from scheduler_tools.simulate import Cluster, SimOptions, Simulation, get_policy
from scheduler_tools.simulate.booking_study import Booking, report, run, with_slot_jobs
from scheduler_tools.simulate.trace import Trace, TraceJob

# Two nodes x 8 GPUs; B has the whole quota, the booking team A none of its own.
CLUSTER = Cluster(2, 8, {"A": 0.0, "B": 16.0}, {"A": 0, "B": 2})
T1 = 3600.0
BOOKED = (Reservation("lab", "A", 8, T1, T1 + 3600),)


def _trace(*rows) -> Trace:
    """rows: (job_id, submit, duration, team) of one 8-GPU pod, each saying its run time."""
    return Trace([
        TraceJob(i, job_id, submit, duration, 8.0, 1, team, estimate_s=duration,
                 requested_gpus=8.0)
        for i, (job_id, submit, duration, team) in enumerate(rows)
    ])  # fmt: skip


def _starts(trace: Trace, **options) -> tuple[dict, Simulation]:
    spec = replace(get_policy("kai"), predict=True)
    sim = Simulation(trace, CLUSTER, spec, SimOptions(cycle_s=60, progress=False, **options))
    return {job.job_id: job.first_start_s for job in sim.run().jobs}, sim


def test_r22_2_work_predicted_to_overrun_t1_waits_and_work_that_ends_before_starts():
    # B's two long jobs would hold both nodes past T1: with the booking the second waits, and a
    # short one (predicted to end before T1) starts beside the first at once. At T1 the slot's
    # GPUs, unused by A, are lent to the waiting job as preemptible work (R22.5).
    trace = _trace(("long1", 0, 7200, "B"), ("long2", 0, 7200, "B"), ("short", 60, 1800, "B"))
    free, _ = _starts(trace)
    held, sim = _starts(trace, reservations=BOOKED)
    assert free == {"long1": 0, "long2": 0, "short": 7200}
    assert held == {"long1": 0, "long2": T1, "short": 60}
    assert sim.reservation_evictions == []


def test_r22_3_the_project_waiting_before_t1_starts_at_t1_taking_back_what_holds_the_gpus():
    # A (no quota) submits before the slot and waits behind B's in-quota work; the cycle at
    # T1 runs although nothing else happens then, and evicts B's job still on the capacity.
    trace = _trace(("b1", 0, 9000, "B"), ("b2", 0, 9000, "B"), ("a1", 600, 1800, "A"))
    free, _ = _starts(trace, watch=(("A", T1),))
    held, sim = _starts(trace, reservations=BOOKED, watch=(("A", T1),))
    assert free["a1"] >= 9000  # without the booking: after B's work
    assert held["a1"] == T1
    assert sim.reservation_evictions == [(T1, 8.0)]
    assert sim.watched == [("A", T1, T1, 8.0)]


def test_the_booking_study_adds_each_slots_jobs_and_reports_whether_the_team_found_its_gpus():
    trace = _trace(("b1", 0, 20_000, "B"), ("b2", 0, 20_000, "B"), ("b3", 700_000, 60, "B"))
    booking = Booking("A", 8, T1, hours=1, fill=0.5)
    slotted = with_slot_jobs(trace, booking, 8)
    slots = [j for j in slotted.jobs if j.job_id.startswith("slot-")]
    assert [(j.job_id, j.submit_s, j.duration_s, j.estimate_s) for j in slots] == [
        ("slot-1-1", T1, 1800, 1800),
        ("slot-2-1", T1 + 7 * 86400, 1800, 1800),
    ]
    free = run(slotted, CLUSTER, booking, False, 60)
    held = run(slotted, CLUSTER, booking, True, 60)
    text = report(booking, booking.starts(700_000), 8, 60, free, held)
    # Week 1: booked, b2 was held back before T1 (R22.2), so nothing is reclaimed at T1 and the
    # slot job starts at once; not booked, it waits for b1 (20,040 s). Week 2: the cluster is
    # idle either way.
    assert "| 1 | 0.04 | 8 / 0 | 1 / 0 of 1 | 0 / 0 |" in text
    assert "| 2 | 7.04 | 8 / 8 | 1 / 1 of 1 | 0 / 0 |" in text
    assert "held its 8 booked GPUs one cycle after T1 in 2 of 2 slots" in text
    assert held["slot_starts"] == {"slot-1-1": T1, "slot-2-1": T1 + 7 * 86400}
    assert free["slot_starts"]["slot-1-1"] == 20_040
    # The others' cost: booked, b2 waits until the slot job ends at 5,400 s (then it runs on
    # the slot's idle GPUs, R22.5): waits 0, 5,400 and 20 (b3, the next cycle) against 0, 0, 20.
    assert "| not booked | 7 / 0 / 18 |" in text
    assert "| booked | 1,807 / 20 / 4,862 |" in text
