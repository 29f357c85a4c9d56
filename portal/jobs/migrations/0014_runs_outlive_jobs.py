"""Runs outlive their job (GPU-hour accounting, issue 23): each run carries its project, job
name, user and type, copied from its job here for the runs recorded so far."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_from_jobs(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    JobRun = apps.get_model("jobs", "JobRun")
    job = Job.objects.filter(id=OuterRef("job_id"))
    JobRun.objects.update(
        project_id=Subquery(job.values("project_id")[:1]),
        job_name=Subquery(job.values("name")[:1]),
        user_id=Subquery(job.values("user_id")[:1]),
        job_type=Subquery(job.values("type")[:1]),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0013_resources"),
        ("tenancy", "0007_resources"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="jobrun",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="job_runs",
                to="tenancy.project",
            ),
        ),
        migrations.AddField(
            model_name="jobrun",
            name="job_name",
            field=models.CharField(default="", max_length=40),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="jobrun",
            name="user",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="job_runs",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="jobrun",
            name="job_type",
            field=models.CharField(
                choices=[("train", "Train"), ("interactive", "Interactive")],
                default="train",
                max_length=16,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(copy_from_jobs, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="jobrun",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="job_runs",
                to="tenancy.project",
            ),
        ),
        migrations.AlterField(
            model_name="jobrun",
            name="job",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="runs",
                to="jobs.job",
            ),
        ),
    ]
