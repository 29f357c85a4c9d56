"""`allot`: the command line for researchers, a thin client of Allot's REST API.

It imports nothing from the portal: everything goes through /api/v1/ with a token, so what a
user can do here they can do from any REST client, under the same permission checks.
"""

__version__ = "0.1.0"
