"""The delivery log kept the first 200 characters of a failed receiver's reply (issue 22): an
internal service's answer shown to a project admin. Old entries keep their status and a short
fixed reason, as new ones do."""

from django.db import migrations


def reason(error: str, status_code: int | None) -> str:
    if status_code is not None:
        return f"HTTP {status_code}"
    if "Timeout" in error.partition(":")[0]:
        return "timed out"
    if "refused" in error.lower():
        return "connection refused"
    return "request failed"


def scrub(apps, schema_editor):
    Delivery = apps.get_model("notify", "Delivery")
    for delivery in Delivery.objects.exclude(error="").only("id", "error", "status_code"):
        fixed = reason(delivery.error, delivery.status_code)
        if fixed != delivery.error:
            Delivery.objects.filter(id=delivery.id).update(error=fixed)


class Migration(migrations.Migration):
    dependencies = [("notify", "0001_initial")]

    operations = [migrations.RunPython(scrub, migrations.RunPython.noop, elidable=True)]
