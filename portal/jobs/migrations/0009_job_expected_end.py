# Backfill (B1): a running job's predicted end given how long it has run, written with the ETAs.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0008_job_held_gpu_s"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="expected_end",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
