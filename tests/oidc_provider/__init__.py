"""A real OpenID Connect provider for the tests: django-oauth-toolkit (OIDC on, RS256) as a tiny
Django project of its own, run by `harness.Provider` in a subprocess on a free port with its own
SQLite database. It never imports the portal."""
