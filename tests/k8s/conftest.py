from tests.k8s.lab import k8s_lab  # noqa: F401  (the fixture, for the tests beside it)
