"""The database refuses to change or delete audit entries (issue 22): a trigger rejects every
UPDATE but the one Django makes when the actor's account is deleted (actor_id set to NULL,
nothing else changed), and every DELETE unless the same transaction holds a PrunePermit row
(portal.audit.retention). PostgreSQL and SQLite (the embedded default) alike. TRUNCATE, which
only a database owner runs by hand (and Django's `flush`), is not guarded.
"""

from django.db import migrations

REFUSED = "audit entries are append-only"

POSTGRES = f"""
CREATE FUNCTION audit_entry_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.actor_id IS NULL AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id')
        THEN
            RETURN NEW;  -- the actor's account was deleted: the entry keeps the username
        END IF;
        RAISE EXCEPTION '{REFUSED}: UPDATE refused' USING ERRCODE = 'restrict_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM audit_prunepermit) THEN
        RETURN OLD;  -- retention pruning, in the transaction that holds the permit
    END IF;
    RAISE EXCEPTION '{REFUSED}: DELETE refused outside retention pruning'
        USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER audit_entry_append_only BEFORE UPDATE OR DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_entry_append_only();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS audit_entry_append_only ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_entry_append_only();
"""

KEPT = ["id", "time", "actor_username", "address", "action", "target_type", "target_id",
        "target_label", "changes", "note"]  # fmt: skip
SQLITE = [
    f"""CREATE TRIGGER audit_entry_no_update BEFORE UPDATE ON audit_auditentry
    WHEN NOT (NEW.actor_id IS NULL AND {" AND ".join(f"NEW.{c} IS OLD.{c}" for c in KEPT)})
    BEGIN SELECT RAISE(ABORT, '{REFUSED}: UPDATE refused'); END""",
    f"""CREATE TRIGGER audit_entry_no_delete BEFORE DELETE ON audit_auditentry
    WHEN NOT EXISTS (SELECT 1 FROM audit_prunepermit)
    BEGIN SELECT RAISE(ABORT, '{REFUSED}: DELETE refused outside retention pruning'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS audit_entry_no_update",
    "DROP TRIGGER IF EXISTS audit_entry_no_delete",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": [POSTGRES], "sqlite": SQLITE}),
            _run({"postgresql": [POSTGRES_REVERSE], "sqlite": SQLITE_REVERSE}),
        )
    ]
