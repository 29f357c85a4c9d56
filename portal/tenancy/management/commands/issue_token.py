"""`manage.py issue_token USER`: create or return USER's API token, printed as the last line."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create (or return) a user's REST API token; the token is the last line printed."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        token, created = Token.objects.get_or_create(user=user)
        verb = "Created" if created else "Existing"
        self.stdout.write(f"{verb} token for {username} (header: Authorization: Token <key>):")
        self.stdout.write(token.key)
