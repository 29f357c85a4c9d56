"""Top-level routes: the REST API, its OpenAPI schema and docs, the admin, health, metrics."""

from django.contrib import admin
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.web.metrics import metrics_view


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the process answers and the database does (container health checks)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("api/v1/", include("portal.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("admin/", admin.site.urls),
    path("healthz/", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),  # Prometheus; ALLOT_METRICS_TOKEN
    path("", include("portal.web.urls")),
]

# Error pages in the portal's layout (used when DEBUG is off, as `make run` serves users).
handler400 = "portal.web.errors.bad_request"
handler403 = "portal.web.errors.permission_denied"
handler404 = "portal.web.errors.not_found"
handler500 = "portal.web.errors.server_error"
