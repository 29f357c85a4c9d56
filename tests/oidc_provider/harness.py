"""Start and stop the test identity provider (tests/oidc_provider) in a subprocess.

    with Provider(tmp_dir) as idp:
        idp.user("alice", "pw", "ml-team")
        ... settings.ALLOT_OIDC_ISSUER = idp.issuer ...

Each provider has its own SQLite database, RSA signing key and free port; `expire_s` makes it
hand out ID tokens that live that long (negative: expired already), `publish_other_key` makes
its JWKS endpoint publish a key it does not sign with, `groups_in_id_token=False` leaves the
groups out of the ID token (the userinfo endpoint still has them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agents.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "allot-portal"
CLIENT_SECRET = "allot-portal-test-secret"  # the test provider's client only


def new_rsa_key() -> str:
    """A fresh 2048-bit RSA private key as PEM."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


class Provider:
    """django-oauth-toolkit serving OpenID Connect on http://127.0.0.1:PORT/o."""

    def __init__(
        self,
        directory: Path,
        *,
        expire_s: int = 300,
        publish_other_key: bool = False,
        groups_in_id_token: bool = True,
    ):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.issuer = f"{self.url}/o"
        self.private_key = new_rsa_key()
        self.log = self.directory / "provider.log"
        self.env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
            PYTHONPATH=str(ROOT),
            IDP_DB=str(self.directory / "provider.sqlite3"),
            IDP_ISSUER=self.issuer,
            IDP_RSA_KEY=self.private_key,
            IDP_ID_TOKEN_EXPIRE_S=str(expire_s),
            IDP_GROUPS_IN_ID_TOKEN="1" if groups_in_id_token else "0",
        )
        if publish_other_key:
            self.env["IDP_JWKS_KEY"] = new_rsa_key()
        for name in ("DATABASE_URL", "REDIS_URL"):  # the portal's, not the provider's
            self.env.pop(name, None)
        self.process: subprocess.Popen | None = None

    def _manage(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"provider: {' '.join(args)} failed:\n{done.stdout}{done.stderr}")

    def user(self, name: str, password: str, *groups: str, email: str = "") -> None:
        """Create or update a provider account with exactly these groups."""
        self._manage("idp", "user", name, password, *groups, "--email", email)

    def start(self) -> Provider:
        self._manage("migrate", "--noinput")
        self._manage("idp", "client", CLIENT_ID, CLIENT_SECRET)
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "django", "runserver", "--noreload",
                 f"127.0.0.1:{self.port}"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        discovery = f"{self.issuer}/.well-known/openid-configuration"
        while True:
            try:
                urllib.request.urlopen(discovery, timeout=2)
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"the provider did not start:\n{self.log.read_text()}"
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def __enter__(self) -> Provider:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
