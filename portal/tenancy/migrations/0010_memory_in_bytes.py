"""Memory limits and defaults in bytes, as Kubernetes counts them (issue 33): the MiB stored so
far become bytes exactly (x 2**20); going back rounds up to the MiB, as they were stored."""

from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Cast, Ceil

MIB = 2**20
FIELDS = {
    "Department": [("memory_limit_mib", "memory_limit_bytes")],
    "Project": [("memory_limit_mib", "memory_limit_bytes"),
                ("default_memory_mib", "default_memory_bytes")],
}  # fmt: skip


def checked_now(schema_editor) -> None:
    """Foreign keys checked at each statement: PostgreSQL refuses to ALTER a table with checks
    still pending from the UPDATE (the column changes that follow it, or precede it going back)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def to_bytes(apps, schema_editor):
    checked_now(schema_editor)
    for model, fields in FIELDS.items():
        apps.get_model("tenancy", model).objects.update(**{new: F(new) * MIB for _, new in fields})


def to_mib(apps, schema_editor):
    checked_now(schema_editor)
    for model, fields in FIELDS.items():
        apps.get_model("tenancy", model).objects.update(
            **{new: Cast(Ceil(F(new) / float(MIB)), models.BigIntegerField()) for _, new in fields}
        )


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0009_project_namespaces"),
    ]

    operations = [
        *[
            migrations.RenameField(model_name=model.lower(), old_name=old, new_name=new)
            for model, fields in FIELDS.items()
            for old, new in fields
        ],
        *[
            migrations.AlterField(
                model_name=model.lower(),
                name=new,
                field=models.PositiveBigIntegerField(blank=True, null=True),
            )
            for model, fields in FIELDS.items()
            for _, new in fields
        ],
        migrations.RunPython(to_bytes, to_mib),
    ]
