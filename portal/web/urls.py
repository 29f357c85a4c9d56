"""Routes of the pages; the REST API lives under /api/v1/ (portal.api)."""

from django.urls import path, re_path

from portal.web import (
    accounting_pages,
    admin_pages,
    audit_pages,
    job_pages,
    rules,
    session_steps,
    sessions,
    sso,
    user_pages,
    views,
    workspace_pages,
)

SESSION = r"^sessions/(?P<project>[^/]+)/(?P<name>[^/]+)/(?P<path>.*)$"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("analytics/", views.analytics, name="analytics"),
    path("accounting/", accounting_pages.accounting_page, name="accounting"),
    path("rules/", rules.rules, name="rules"),
    path("login/", sso.SignIn.as_view(), name="login"),
    path("logout/", sso.sign_out, name="logout"),
    path("oidc/login/", sso.sso_login, name="oidc-login"),
    path("oidc/callback/", sso.sso_callback, name="oidc-callback"),
    path("sso/rules/", sso.rules, name="sso-rules"),
    path("sso/rules/<int:pk>/delete/", sso.rule_delete, name="sso-rule-delete"),
    path("me/", admin_pages.me, name="me"),
    path("me/workspaces/", workspace_pages.my_workspaces, name="my-workspaces"),
    path("projects/", admin_pages.projects, name="projects"),
    path("projects/new/", admin_pages.project_form, name="project-new"),
    path("projects/<str:name>/", admin_pages.project_detail, name="project-detail"),
    path("projects/<str:name>/edit/", admin_pages.project_form, name="project-edit"),
    path("projects/<str:name>/delete/", admin_pages.project_delete, name="project-delete"),
    path("projects/<str:name>/members/", admin_pages.member_add, name="member-add"),
    path(
        "projects/<str:name>/members/<str:username>/remove/",
        admin_pages.member_remove,
        name="member-remove",
    ),
    path("projects/<str:name>/webhooks/", admin_pages.webhook_add, name="webhook-add"),
    path(
        "projects/<str:name>/webhooks/<int:pk>/delete/",
        admin_pages.webhook_delete,
        name="webhook-delete",
    ),
    path("nodes/", admin_pages.nodes, name="nodes"),
    path("nodes/<str:name>/", admin_pages.node_update, name="node-update"),
    path("users/", admin_pages.users, name="users"),
    path("audit/", audit_pages.audit_log, name="audit"),
    path("users/<str:username>/password/", admin_pages.user_password, name="user-password"),
    path("users/<str:username>/update/", user_pages.user_update, name="user-update"),
    path("jobs/", job_pages.jobs, name="jobs"),
    path("jobs/new/", job_pages.job_new, name="job-new"),
    path("jupyter/new/", job_pages.jupyter_new, name="jupyter-new"),
    path("jobs/<str:project>/<str:name>/", job_pages.job_detail, name="job-detail"),
    path(
        "jobs/<str:project>/<str:name>/session/",
        session_steps.session_progress,
        name="job-session-progress",
    ),
    path("jobs/<str:project>/<str:name>/stop/", job_pages.job_stop, name="job-stop"),
    path("jobs/<str:project>/<str:name>/resume/", job_pages.job_resume, name="job-resume"),
    path("jobs/<str:project>/<str:name>/delete/", job_pages.job_delete, name="job-delete"),
    path("jobs/<str:project>/<str:name>/extend/", job_pages.job_extend, name="job-extend"),
    re_path(SESSION, sessions.session_proxy, name="session"),
]
