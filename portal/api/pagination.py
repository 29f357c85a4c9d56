"""List pages shaped `{"count", "next", "previous", "results"}`, `?page_size=` up to 1000."""

from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """Page-number pagination; clients choose up to 1000 items a page."""

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
