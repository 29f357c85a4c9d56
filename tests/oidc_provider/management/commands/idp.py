"""`idp client ID SECRET` registers the portal as a confidential client (redirect and post-logout
URIs on 127.0.0.1 or localhost, any port: RFC 8252 loopback); `idp user NAME PASSWORD [GROUP ...]`
creates or updates a user and sets their groups (exactly those given)."""

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from oauth2_provider.models import Application

HOSTS = ("127.0.0.1", "localhost")  # any port (RFC 8252 loopback)


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("what", choices=["client", "user"])
        parser.add_argument("name")
        parser.add_argument("secret")
        parser.add_argument("groups", nargs="*")
        parser.add_argument("--email", default="")

    def handle(self, what, name, secret, groups, email, **options):
        if what == "client":
            Application.objects.filter(client_id=name).delete()
            Application.objects.create(
                name="Allot", client_id=name, client_secret=secret,
                client_type=Application.CLIENT_CONFIDENTIAL,
                authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
                algorithm=Application.RS256_ALGORITHM, skip_authorization=True,
                redirect_uris=" ".join(f"http://{host}/oidc/callback/" for host in HOSTS),
                post_logout_redirect_uris=" ".join(f"http://{host}/login/" for host in HOSTS),
            )  # fmt: skip
            return
        user, _ = User.objects.get_or_create(username=name)
        user.set_password(secret)
        user.email = email or f"{name}@example.edu"
        user.save()
        user.groups.set([Group.objects.get_or_create(name=group)[0] for group in groups])
