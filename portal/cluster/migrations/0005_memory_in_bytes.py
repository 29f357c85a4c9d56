"""Node memory in bytes, as Kubernetes counts it (issue 33): the MiB stored so far become bytes
exactly (x 2**20); going back rounds down to the MiB (a node never offers more than it has)."""

from django.core.validators import MinValueValidator
from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Cast, Floor

MIB = 2**20
FIELDS = [
    ("memory_mib", "memory_bytes"),
    ("gpu_memory_mib", "gpu_memory_bytes"),
    ("outside_memory_mib", "outside_memory_bytes"),
]


def checked_now(schema_editor) -> None:
    """Foreign keys checked at each statement: PostgreSQL refuses to ALTER a table with checks
    still pending from the UPDATE (the column changes that follow it, or precede it going back)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def to_bytes(apps, schema_editor):
    checked_now(schema_editor)
    apps.get_model("cluster", "Node").objects.update(**{new: F(new) * MIB for _, new in FIELDS})


def to_mib(apps, schema_editor):
    checked_now(schema_editor)
    apps.get_model("cluster", "Node").objects.update(
        **{new: Cast(Floor(F(new) / float(MIB)), models.BigIntegerField()) for _, new in FIELDS}
    )


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0004_outside_pods"),
    ]

    operations = [
        *[
            migrations.RenameField(model_name="node", old_name=old, new_name=new)
            for old, new in FIELDS
        ],
        migrations.AlterField(
            model_name="node",
            name="gpu_memory_bytes",
            field=models.PositiveBigIntegerField(
                default=32 * 2**30, validators=[MinValueValidator(1)]
            ),
        ),
        migrations.AlterField(
            model_name="node",
            name="memory_bytes",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(to_bytes, to_mib),
    ]
