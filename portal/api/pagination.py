"""List pages shaped `{"count", "next", "previous", "results"}`, `?page_size=` up to 1000.

`page` and `page_size` are whole numbers within the bounds the schema documents; anything else
(`null`, `1.5`, `0`, `1001`, empty) is a 400 naming the parameter, not the default page in
disguise (issue 22 item 9). A page past the last is a 404, as in DRF.
"""

from django.core.paginator import Paginator
from django.db.models import Count, QuerySet, Window
from django.db.models.query import ModelIterable
from rest_framework.pagination import PageNumberPagination

from portal.api.fields import whole_number, whole_number_parameter

MAX_PAGE_SIZE = 1000
MAX_PAGE = 1_000_000  # a million pages of 1000: far past any list the portal keeps


TOTAL = "allot_page_total"  # the annotation that carries the count on each row of a page


class CountingPaginator(Paginator):
    """Django's paginator, reading a page of model rows and the count of all in one query (a
    `COUNT(*) OVER ()` beside each row) instead of a COUNT and then the page: a list request's
    second query was a tenth of its CPU (issue 39). A page that comes back empty (past the
    last, or of an empty list) is counted as Django counts it, so every answer and every
    404 stays as it was. Querysets a window would count differently (DISTINCT, GROUP BY,
    UNION, sliced) or that yield other than models are paginated as Django does."""

    def page(self, number):
        rows = self._rows_with_total(number)
        if rows:
            self.count = getattr(rows[0], TOTAL)  # Paginator.count is a cached property
            return self._get_page(rows, self.validate_number(number), self)
        return super().page(number)

    def _rows_with_total(self, number) -> list:
        listed = self.object_list
        if not (isinstance(listed, QuerySet) and isinstance(number, int) and number >= 1):
            return []
        query = listed.query
        if (
            listed._iterable_class is not ModelIterable
            or query.distinct
            or query.group_by is not None
            or query.combinator
            or query.is_sliced
        ):
            return []
        bottom = (number - 1) * self.per_page
        counted = listed.annotate(**{TOTAL: Window(Count("*"))})
        return list(counted[bottom : bottom + self.per_page])


class Pagination(PageNumberPagination):
    """Page-number pagination; clients choose up to 1000 items a page."""

    django_paginator_class = CountingPaginator

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    last_page_strings = ()  # `page` is a number, as documented

    def get_page_size(self, request) -> int:
        params = request.query_params
        return whole_number(params, self.page_size_query_param, 1, MAX_PAGE_SIZE, self.page_size)

    def get_page_number(self, request, paginator) -> int:
        return whole_number(request.query_params, self.page_query_param, 1, MAX_PAGE, 1)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        return [
            whole_number_parameter(
                self.page_query_param, 1, MAX_PAGE, "A page number (1 is the first page)."
            ),
            whole_number_parameter(
                self.page_size_query_param, 1, MAX_PAGE_SIZE,
                f"Items a page (default {self.page_size}).",
            ),
        ]  # fmt: skip
