"""Routes of the pages; the REST API lives under /api/v1/ (portal.api)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from portal.web import views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("analytics/", views.analytics, name="analytics"),
    path(
        "login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
