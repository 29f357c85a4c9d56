from django.apps import AppConfig


class TenancyConfig(AppConfig):
    """Projects, departments, memberships and the access helpers every view goes through."""

    name = "portal.tenancy"
    label = "tenancy"

    def ready(self) -> None:
        # Every process that can change a token or a user (web, worker, shell, admin) tells
        # the web processes to drop the tokens they keep (portal.tenancy.token_cache).
        from portal.tenancy import token_cache  # noqa: F401
