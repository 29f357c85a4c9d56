"""A new password signs out every API token of its user (issue 22 item 7).

Django calls `password_changed(password, user)` of each configured password validator after a
user saved with `set_password()` - the only way a password changes: `/me/`, a cluster admin
on /users/ or the API (`services.set_password`), /admin/, `manage.py changepassword`, a reset.
Hooking there catches every door, now and later, without a signal on each user save, and it
is not called when Django merely re-hashes an unchanged password at sign-in (a hasher
upgrade), which must not sign anyone out. Listed in AUTH_PASSWORD_VALIDATORS (settings).
"""

from __future__ import annotations


class RevokeTokensOnPasswordChange:
    """Rejects no password; after a password change, revokes the user's API tokens."""

    def validate(self, password: str, user=None) -> None:
        return None

    def password_changed(self, password: str, user=None) -> None:
        from portal.tenancy import services

        if user is not None and user.pk is not None:
            services.revoke_all_tokens(user, reason="password changed")

    def get_help_text(self) -> str:
        return "Changing your password revokes all your API tokens."
