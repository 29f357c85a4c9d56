"""The REST API's routes under /api/v1/ (contract of issue 4)."""

from django.urls import path

from portal.api.views.accounting import Accounting
from portal.api.views.audit import AuditList
from portal.api.views.budgets import BudgetDetail, BudgetList
from portal.api.views.clock import SchedulerClock
from portal.api.views.cluster import NodeDetail, NodeList, PoolTopologyDetail, PoolTopologyList
from portal.api.views.jobs import (
    AnalyticsAllocation,
    JobBulk,
    JobDetail,
    JobEvents,
    JobExtend,
    JobList,
    JobLogs,
    JobResume,
    JobRuns,
    JobShell,
    JobStop,
    Overview,
    SchedulerCycles,
)
from portal.api.views.notify import DeliveryList, MyPreference, WebhookDetail, WebhookList
from portal.api.views.reservations import ReservationDetail, ReservationList
from portal.api.views.sharing import JobAccess, JobShare, JobShares
from portal.api.views.sso import SSORuleDetail, SSORuleList
from portal.api.views.tenancy import (
    DepartmentDetail,
    DepartmentList,
    MemberDetail,
    MemberList,
    ProjectDetail,
    ProjectList,
    UserDetail,
    UserList,
)
from portal.api.views.tokens import (
    MyTokenDetail,
    MyTokenList,
    ObtainToken,
    UserTokenDetail,
    UserTokenList,
)
from portal.api.views.userlimits import UserLimitDetail, UserLimitList
from portal.api.views.whatif import WhatIf
from portal.api.views.workspaces import MyWorkspaces, WorkspaceDetail

urlpatterns = [
    path("nodes/", NodeList.as_view(), name="node-list"),
    path("nodes/<str:name>/", NodeDetail.as_view(), name="node-detail"),
    path("topology/", PoolTopologyList.as_view(), name="topology-list"),
    path("topology/<str:pool>/", PoolTopologyDetail.as_view(), name="topology-detail"),
    path("departments/", DepartmentList.as_view(), name="department-list"),
    path("departments/<str:name>/", DepartmentDetail.as_view(), name="department-detail"),
    path("projects/", ProjectList.as_view(), name="project-list"),
    path("projects/<str:name>/", ProjectDetail.as_view(), name="project-detail"),
    path("projects/<str:name>/members/", MemberList.as_view(), name="member-list"),
    path(
        "projects/<str:name>/members/<str:username>/",
        MemberDetail.as_view(),
        name="member-detail",
    ),
    path("projects/<str:name>/user-limits/", UserLimitList.as_view(), name="user-limit-list"),
    path(
        "projects/<str:name>/user-limits/<int:pk>/",
        UserLimitDetail.as_view(),
        name="user-limit-detail",
    ),
    path("users/", UserList.as_view(), name="user-list"),
    path("users/<str:username>/", UserDetail.as_view(), name="user-detail"),
    path("users/<str:username>/tokens/", UserTokenList.as_view(), name="user-token-list"),
    path(
        "users/<str:username>/tokens/<int:pk>/", UserTokenDetail.as_view(), name="user-token-detail"
    ),
    path("projects/<str:name>/webhooks/", WebhookList.as_view(), name="webhook-list"),
    path("projects/<str:name>/webhooks/<int:pk>/", WebhookDetail.as_view(), name="webhook-detail"),
    path(
        "projects/<str:name>/webhooks/<int:pk>/deliveries/",
        DeliveryList.as_view(),
        name="webhook-deliveries",
    ),
    path("me/notifications/", MyPreference.as_view(), name="my-notifications"),
    path("me/workspaces/", MyWorkspaces.as_view(), name="my-workspaces"),
    path(
        "workspaces/<str:project>/<str:username>/",
        WorkspaceDetail.as_view(),
        name="workspace-detail",
    ),
    path("jobs/", JobList.as_view(), name="job-list"),
    path("jobs/bulk/", JobBulk.as_view(), name="job-bulk"),
    path("jobs/<str:project>/<str:name>/", JobDetail.as_view(), name="job-detail"),
    path("jobs/<str:project>/<str:name>/events/", JobEvents.as_view(), name="job-events"),
    path("jobs/<str:project>/<str:name>/logs/", JobLogs.as_view(), name="job-logs"),
    path("jobs/<str:project>/<str:name>/runs/", JobRuns.as_view(), name="job-runs"),
    path("jobs/<str:project>/<str:name>/shell/", JobShell.as_view(), name="job-shell"),
    path("jobs/<str:project>/<str:name>/extend/", JobExtend.as_view(), name="job-extend"),
    path("jobs/<str:project>/<str:name>/stop/", JobStop.as_view(), name="job-stop"),
    path("jobs/<str:project>/<str:name>/shares/", JobShares.as_view(), name="job-shares"),
    path("jobs/<str:project>/<str:name>/shares/<int:grant>/", JobShare.as_view(), name="job-share"),
    path("jobs/<str:project>/<str:name>/access/", JobAccess.as_view(), name="job-access"),
    path("jobs/<str:project>/<str:name>/resume/", JobResume.as_view(), name="job-resume"),
    path("auth/token/", ObtainToken.as_view(), name="auth-token"),
    path("sso/rules/", SSORuleList.as_view(), name="sso-rule-list"),
    path("sso/rules/<int:pk>/", SSORuleDetail.as_view(), name="sso-rule-detail"),
    path("auth/tokens/", MyTokenList.as_view(), name="my-token-list"),
    path("auth/tokens/<int:pk>/", MyTokenDetail.as_view(), name="my-token-detail"),
    path("analytics/allocation/", AnalyticsAllocation.as_view(), name="analytics-allocation"),
    path("accounting/", Accounting.as_view(), name="accounting-report"),
    path("budgets/", BudgetList.as_view(), name="budget-list"),
    path("budgets/<int:pk>/", BudgetDetail.as_view(), name="budget-detail"),
    path("reservations/", ReservationList.as_view(), name="reservation-list"),
    path("reservations/<int:pk>/", ReservationDetail.as_view(), name="reservation-detail"),
    path("what-if/", WhatIf.as_view(), name="what-if"),
    path("overview/", Overview.as_view(), name="overview"),
    path("audit/", AuditList.as_view(), name="audit-list"),
    path("scheduler/cycles/", SchedulerCycles.as_view(), name="scheduler-cycles"),
    path("scheduler/clock/", SchedulerClock.as_view(), name="scheduler-clock"),
]
