"""A portal's life written by an OLDER Allot's own code (issue 35's upgrade test): run as
`manage.py shell -c` in a tree of that commit, so it may use only what that commit had (memory
in MiB). Nodes, a department, projects with memory limits, users and their roles, an API token, a
webhook and a delivery, a notification preference, a sign-on rule and identity,
jobs that completed, were evicted, stopped or still run (their runs, events, usage samples and
rollups), a job deleted whose runs outlive it, and the audit entries its services recorded."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from agents.simulated import SimulatedAgent
from portal.cluster import services as cluster
from portal.jobs.models import Job, Status
from portal.jobs.services import delete_job, stop_job, submit_job
from portal.notify.models import Delivery, Preference, Webhook
from portal.scheduling.settle import settle
from portal.tenancy import services as tenancy
from portal.tenancy.models import GroupRoleRule, SSOIdentity


class Clock:
    """A clock moved by hand, ahead of the wall clock as the scheduling tests' is."""

    def __init__(self):
        self.now = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=1)

    def __call__(self):
        return self.now


clock = Clock()
agent = SimulatedAgent(start_delay_s=0, clock=clock)


def run(seconds: float = 0) -> None:
    clock.now += timedelta(seconds=seconds)
    assert settle(agent)[1], "the cycles did not settle"


for name in ("dgx1-1", "dgx1-2"):
    cluster.create_node(name=name, gpus=8, gpu_memory_mib=32768, pool="default",
                        cpu_millis=80_000, memory_mib=524_288)  # fmt: skip
vision = tenancy.create_department(name="vision", quota=Decimal(8), cpu_limit_millis=64_000,
                                   memory_limit_mib=393_216)  # fmt: skip
team_a = tenancy.create_project(name="team-a", quota=Decimal(8), department=vision,
                                memory_limit_mib=262_144, default_memory_mib=8192)  # fmt: skip
team_b = tenancy.create_project(name="team-b", quota=Decimal(0), limit=Decimal(16))
root = tenancy.create_user("root", "an-old-admin-password-1", is_staff=True, is_superuser=True)
bob = tenancy.create_user("bob", "an-old-user-password-1")
tenancy.add_member(team_a, bob, "researcher")
tenancy.add_member(team_b, bob, "viewer")
tenancy.issue_token(bob, "pipeline")
# What only settings pages write: webhooks and their deliveries, preferences, sign-on rules.
hook = Webhook.objects.create(project=team_a, url="https://hooks.example.org/allot")
Delivery.objects.create(webhook=hook, event="completed", job_name="a-done", attempts=2,
                        payload={"job": "a-done"}, status_code=502, error="502")  # fmt: skip
Preference.objects.create(user=bob, email=False)
GroupRoleRule.objects.create(group="vision-lab", project=team_a, role="viewer")
SSOIdentity.objects.create(user=bob, issuer="https://idp.example.org", subject="bob-42")

submit_job(bob, team_b, name="b-big", gpus=Decimal(8), cpu_millis=8000, memory_mib=65_536,
           memory_limit_mib=98_304, sim_duration_s=100_000)  # fmt: skip
submit_job(bob, team_a, name="a-done", gpus=Decimal("0.5"), gpu_memory_mib=16_384,
           sim_duration_s=60)  # fmt: skip
run()
run(600)  # a-done completes
submit_job(bob, team_b, name="b-more", gpus=Decimal(8), memory_mib=1025, sim_duration_s=100_000)
run()
run(300)
submit_job(bob, team_a, name="a-need", gpus=Decimal(8), sim_duration_s=100_000)
run()  # team-a reclaims its quota: a team-b job is evicted
run(300)
stop_job(Job.objects.get(name="a-need"), bob)
run(300)
submit_job(bob, team_a, name="a-gone", gpus=Decimal(1), sim_duration_s=30)
run()
run(120)
delete_job(Job.objects.get(name="a-gone"))  # its runs stay for the accounting
run(60)
assert Job.objects.filter(status=Status.RUNNING).exists()
