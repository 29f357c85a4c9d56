"""List pages shaped `{"count", "next", "previous", "results"}`, `?page_size=` up to 1000.

`page` and `page_size` are whole numbers within the bounds the schema documents; anything else
(`null`, `1.5`, `0`, `1001`, empty) is a 400 naming the parameter, not the default page in
disguise (issue 22 item 9). A page past the last is a 404, as in DRF.
"""

from rest_framework.pagination import PageNumberPagination

from portal.api.fields import whole_number, whole_number_parameter

MAX_PAGE_SIZE = 1000
MAX_PAGE = 1_000_000  # a million pages of 1000: far past any list the portal keeps


class Pagination(PageNumberPagination):
    """Page-number pagination; clients choose up to 1000 items a page."""

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
