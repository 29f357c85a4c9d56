"""`manage.py issue_token USER [--name NAME] [--expires-in 30d]`: a new API token for USER, its
key printed as the last line (and nowhere stored: only its SHA-256 is kept).

Issued by the service `allot login` and the user's page use (`services.issue_token`); the user
sees it listed on `/me/` and may revoke it there.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from portal.tenancy import services
from portal.tenancy.models import TOKEN_EXPIRY_FORMS, TOKEN_NAME_MAX, parse_token_expiry


class Command(BaseCommand):
    help = "Create a new REST API token for a user; the token is the last line printed."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--name",
            default="issued by manage.py issue_token",
            help=f"what the token is called (up to {TOKEN_NAME_MAX} characters)",
        )
        parser.add_argument("--expires-in", help=f"{TOKEN_EXPIRY_FORMS}; default: never")

    def handle(self, *args, username: str, name: str, expires_in: str | None, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if not name.strip() or len(name) > TOKEN_NAME_MAX:
            raise CommandError(f"--name: 1 to {TOKEN_NAME_MAX} characters")
        try:
            expires_at = expires_in and parse_token_expiry(expires_in, timezone.now())
        except ValueError as reason:
            raise CommandError(f"--expires-in: {reason}") from None
        token, key = services.issue_token(user, name.strip(), expires_at or None)
        until = f", expires {expires_at.isoformat(timespec='minutes')}" if expires_at else ""
        self.stdout.write(f"New token {token.name!r} for {username}{until} "
                          f"(header: Authorization: Token <key>):")  # fmt: skip
        self.stdout.write(key)
