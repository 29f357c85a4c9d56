"""Runs keep the CPU and memory they held (issue 26); the runs so far take their job's."""

from django.db import migrations, models
from django.db.models import F, OuterRef, Subquery


def from_jobs(apps, schema_editor):
    """A run whose job still exists held what the job asks for (per pod x pods)."""
    Job = apps.get_model("jobs", "Job")
    JobRun = apps.get_model("jobs", "JobRun")
    held = Job.objects.filter(id=OuterRef("job_id")).annotate(
        cpu=F("cpu_millis") * F("pods"), memory=F("memory_mib") * F("pods")
    )
    JobRun.objects.filter(job__isnull=False).update(
        cpu_millis=Subquery(held.values("cpu")[:1]), memory_mib=Subquery(held.values("memory")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0015_usage_cpu_memory"),
    ]

    operations = [
        migrations.AddField(
            model_name="jobrun",
            name="cpu_millis",
            field=models.PositiveBigIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="jobrun",
            name="memory_mib",
            field=models.PositiveBigIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(from_jobs, migrations.RunPython.noop),
    ]
