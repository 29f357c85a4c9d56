"""The REST client: one method per call the CLI makes; errors become `CliError` with the API's
field messages in plain words, or the URL it could not reach."""

from __future__ import annotations

from typing import Any

import httpx


class CliError(Exception):
    """A failure to show the user as it is, on stderr, with exit status 1."""


def describe(body: Any) -> str:
    """The API's error body as lines of `field: reason`."""
    if isinstance(body, dict):
        lines = []
        for field, reasons in body.items():
            if isinstance(reasons, list):
                reasons = "; ".join(str(r) for r in reasons)
            lines.append(str(reasons) if field == "detail" else f"{field}: {reasons}")
        return "\n".join(lines)
    return str(body)


class Api:
    """Calls /api/v1/ on `url` with `token`."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0):
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Token {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def call(self, method: str, path: str, **kwargs) -> Any:
        """One request; the JSON answer, or CliError naming what went wrong."""
        return self.answer(self.send(method, path, **kwargs))

    def send(self, method: str, path: str, **kwargs) -> httpx.Response:
        """One request; the response as it came (CliError when the portal cannot be reached)."""
        try:
            return self.http.request(method, f"/api/v1/{path.lstrip('/')}", **kwargs)
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach {self.url}: {exc}") from None

    def answer(self, response: httpx.Response) -> Any:
        """The JSON of a response, or CliError with the API's field messages."""
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text[:300] or response.reason_phrase
            if response.status_code == 401:  # the portal says why: none, revoked or expired
                reason = body.get("detail") if isinstance(body, dict) else None
                body = (f"{reason} " if reason else "") + (
                    "not logged in: run `allot login URL` (or --token TOKEN) or set ALLOT_TOKEN"
                )
            raise CliError(describe(body))
        return response.json() if response.content else None

    def some(self, path: str, limit: int | None, **params) -> tuple[list, int]:
        """The first `limit` items of a paginated list (every item when None) and how many
        there are in all."""
        params = {k: v for k, v in params.items() if v is not None}
        size = min(limit, 1000) if limit else 1000
        page = self.call("GET", path, params={**params, "page_size": size})
        items, total = list(page["results"]), page["count"]
        while page.get("next") and (limit is None or len(items) < limit):
            page = self.call("GET", page["next"].split("/api/v1/", 1)[1])
            items += page["results"]
        return items[:limit] if limit else items, total

    def all(self, path: str, **params) -> list:
        """Every item of a paginated list."""
        params = {k: v for k, v in params.items() if v is not None}
        page = self.call("GET", path, params={**params, "page_size": 1000})
        items = list(page["results"])
        while page.get("next"):
            page = self.call("GET", page["next"].split("/api/v1/", 1)[1])
            items += page["results"]
        return items
