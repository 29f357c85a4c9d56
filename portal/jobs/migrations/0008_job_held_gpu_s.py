# Service bands (Allot's L rules): the GPU-seconds a job held in runs ended by an eviction or a move.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0007_job_run_time_estimate"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="held_gpu_s",
            field=models.FloatField(default=0.0),
        ),
    ]
