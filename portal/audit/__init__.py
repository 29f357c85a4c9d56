"""The audit log (issue 22): who did what, when, from which address, and what changed.

Services record entries with `portal.audit.services.record`; nothing in the portal updates or
deletes them but the retention pruning (`portal.audit.retention`).
"""
