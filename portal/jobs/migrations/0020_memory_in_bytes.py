"""Memory in bytes, as Kubernetes counts it (issue 33): the MiB stored so far become bytes
exactly (x 2**20); going back rounds a request up to the MiB, as it was stored before."""

from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Cast, Ceil

MIB = 2**20
FIELDS = {  # model -> the renamed fields (old, new)
    "Job": [("memory_mib", "memory_bytes"), ("memory_limit_mib", "memory_limit_bytes"),
            ("gpu_memory_mib", "gpu_memory_bytes")],
    "JobRun": [("memory_mib", "memory_bytes")],
    "UsageSample": [("allocated_memory_mib", "allocated_memory_bytes")],
    "UsageRollup": [("memory_mib_sum", "memory_bytes_sum")],
}  # fmt: skip


def checked_now(schema_editor) -> None:
    """Foreign keys checked at each statement: PostgreSQL refuses to ALTER a table with checks
    still pending from the UPDATE (the column changes that follow it, or precede it going back)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def to_bytes(apps, schema_editor):
    checked_now(schema_editor)
    for model, fields in FIELDS.items():
        apps.get_model("jobs", model).objects.update(**{new: F(new) * MIB for _, new in fields})


def to_mib(apps, schema_editor):
    checked_now(schema_editor)
    for model, fields in FIELDS.items():
        if model == "UsageRollup":  # a sum of samples, a float: divided back as it is
            back = {new: F(new) / float(MIB) for _, new in fields}
        else:
            back = {
                new: Cast(Ceil(F(new) / float(MIB)), models.BigIntegerField()) for _, new in fields
            }
        apps.get_model("jobs", model).objects.update(**back)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0019_external_workloads"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="job", name="job_gpus_or_cpu"),
        *[
            migrations.RenameField(model_name=model.lower(), old_name=old, new_name=new)
            for model, fields in FIELDS.items()
            for old, new in fields
        ],
        migrations.AlterField(
            model_name="job",
            name="memory_bytes",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name="job",
            name="memory_limit_bytes",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="job",
            name="gpu_memory_bytes",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(to_bytes, to_mib),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.CheckConstraint(
                condition=models.Q(gpus__gt=0)
                | models.Q(cpu_millis__gt=0, gpus=0)
                | models.Q(memory_bytes__gt=0, gpus=0),
                name="job_gpus_or_cpu",
            ),
        ),
    ]
