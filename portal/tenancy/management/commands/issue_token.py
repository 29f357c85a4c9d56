"""`manage.py issue_token USER`: create or return USER's API token, printed as the last line.

The token `allot login` and the user's page hand out too (`portal.tenancy.services.issue_token`).
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.tenancy import services


class Command(BaseCommand):
    help = "Create (or return) a user's REST API token; the token is the last line printed."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        token, created = services.issue_token(user)
        verb = "Created" if created else "Existing"
        self.stdout.write(f"{verb} token for {username} (header: Authorization: Token <key>):")
        self.stdout.write(token.key)
