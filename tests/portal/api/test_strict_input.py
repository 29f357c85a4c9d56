"""The API takes what its OpenAPI schema says and refuses the rest, naming the field (issue 22
item 9: Schemathesis's negative_data_rejection and positive_data_acceptance checks, each case it
found as a focused test)."""

import importlib
import inspect
import pkgutil
import re

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.management import call_command
from rest_framework import serializers

import portal.api.serializers
import portal.api.views
from portal.api.fields import StrictBooleanField
from portal.core.validators import validate_mount_path
from portal.notify.models import Preference

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker, tmp_path_factory):
    """The OpenAPI schema as served, parsed once."""
    import yaml

    path = tmp_path_factory.mktemp("schema") / "schema.yaml"
    with django_db_blocker.unblock():
        call_command("spectacular", "--file", str(path))
    return yaml.safe_load(path.read_text())


def query_parameters(schema: dict, path: str, method: str = "get") -> dict:
    operation = schema["paths"][path][method]
    return {p["name"]: p["schema"] for p in operation.get("parameters", []) if p["in"] == "query"}


# --- page and page_size --------------------------------------------------------------------------

LISTS = ["/api/v1/projects/", "/api/v1/jobs/", "/api/v1/nodes/", "/api/v1/auth/tokens/"]


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(
    "value", ["null", "", "0", "1001", "-1", "1.5", "+5", " 5", "\uff15", "true"]
)
def test_a_page_size_that_is_not_a_whole_number_from_1_to_1000_is_a_400_naming_it(
    api, member, path, value
):
    response = api(member).get(path, {"page_size": value})
    assert response.status_code == 400, response.content
    assert response.json() == {"page_size": ["must be a whole number from 1 to 1000"]}


@pytest.mark.parametrize("value", ["null", "", "0", "-2", "last", "1e3", "1.0"])
def test_a_page_that_is_not_a_whole_number_is_a_400_naming_it(api, member, value):
    response = api(member).get("/api/v1/projects/", {"page": value})
    assert response.status_code == 400, response.content
    assert response.json() == {"page": ["must be a whole number from 1 to 1000000"]}


def test_good_pages_are_served_and_a_page_past_the_last_is_a_404(api, cluster_admin):
    client = api(cluster_admin)
    for i in range(3):
        client.post("/api/v1/projects/", {"name": f"p{i}", "quota": 1}, format="json")
    second = client.get("/api/v1/projects/", {"page_size": "2", "page": "2"}).json()
    assert (second["count"], len(second["results"]), second["next"]) == (3, 1, None)
    assert len(client.get("/api/v1/projects/", {"page_size": "1000"}).json()["results"]) == 3
    assert client.get("/api/v1/projects/", {"page": "3", "page_size": "2"}).status_code == 404


def test_the_schema_bounds_page_and_page_size_on_every_list(schema):
    lists = [path for path, ops in schema["paths"].items()
             if "get" in ops if "page_size" in query_parameters(schema, path)]  # fmt: skip
    assert len(lists) >= 10, lists
    for path in lists:
        parameters = query_parameters(schema, path)
        assert parameters["page_size"] == {"type": "integer", "minimum": 1, "maximum": 1000}
        assert parameters["page"] == {"type": "integer", "minimum": 1, "maximum": 1_000_000}


# --- booleans ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, "true", "false", "yes", "on", [], {}])
def test_a_notification_setting_that_is_not_a_json_boolean_is_a_400_naming_it(api, member, value):
    response = api(member).patch("/api/v1/me/notifications/", {"browser": value}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["browser"]
    assert response.json()["browser"][0].startswith("must be true or false")
    assert not Preference.objects.filter(user=member).exists()


def test_json_booleans_are_taken(api, member):
    response = api(member).patch("/api/v1/me/notifications/", {"browser": False}, format="json")
    assert response.status_code == 200 and response.json() == {"email": True, "browser": False}


def test_a_node_cordon_and_a_volume_take_json_booleans_only(api, cluster_admin, team_a, nodes):
    client = api(cluster_admin)
    refused = client.patch("/api/v1/nodes/dgx1-1/", {"schedulable": "false"}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["schedulable"]
    assert client.patch("/api/v1/nodes/dgx1-1/", {"schedulable": False},
                        format="json").status_code == 200  # fmt: skip
    job = {"project": "team-a", "name": "v", "gpus": 1,
           "volumes": [{"pvc": "data", "mount_path": "/data", "read_only": 1}]}  # fmt: skip
    refused = client.post("/api/v1/jobs/", job, format="json")
    assert refused.status_code == 400, refused.content
    assert "read_only" in str(refused.json()["volumes"])


def _serializer_classes():
    """Every serializer class defined in the API's modules."""
    modules = [portal.api.serializers, portal.api.views]
    for package in modules:
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for _, value in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(value, serializers.BaseSerializer)
                    and value.__module__ == module.__name__
                ):
                    yield value


def _lenient_booleans(serializer, where: str):
    for name, field in serializer.fields.items():
        if isinstance(field, serializers.ListSerializer):
            field = field.child
        if isinstance(field, serializers.BaseSerializer):
            yield from _lenient_booleans(field, f"{where}.{name}")
        elif isinstance(field, serializers.BooleanField) and not field.read_only:
            if not isinstance(field, StrictBooleanField):
                yield f"{where}.{name}"


def test_no_api_serializer_has_a_lenient_writable_boolean():
    found = list(_serializer_classes())
    assert len(found) > 20
    lenient = [where for cls in found for where in _lenient_booleans(cls(), cls.__name__)]
    assert lenient == []


# --- the query parameters of analytics, logs, jobs and accounting --------------------------------

ANALYTICS = "/api/v1/analytics/allocation/"


@pytest.mark.parametrize("step", ["0", "-1", "1.5", "2592001", "", "ten", "٣"])
def test_an_analytics_step_out_of_bounds_is_a_400_naming_it(api, member, step):
    response = api(member).get(ANALYTICS, {"step": step})
    assert response.status_code == 400
    assert response.json() == {"step": ["must be a whole number of seconds between 1 and 2592000"]}


def test_the_schema_bounds_the_analytics_step_and_says_the_times_are_date_times(schema):
    parameters = query_parameters(schema, ANALYTICS)
    assert parameters["step"] == {"type": "integer", "minimum": 1, "maximum": 2592000}
    assert parameters["from"] == parameters["to"] == {"type": "string", "format": "date-time"}


@pytest.mark.parametrize(
    ("query", "field"),
    [({"tail": "0"}, "tail"), ({"tail": "10001"}, "tail"), ({"tail": "x"}, "tail"),
     ({"run": "0"}, "run"), ({"run": "\u00b2"}, "run"), ({"run": ""}, "run")],
)  # fmt: skip
def test_a_log_tail_or_run_out_of_bounds_is_a_400_naming_it(api, member, nodes, query, field):
    client = api(member)
    client.post("/api/v1/jobs/", {"project": "team-a", "name": "j", "gpus": 1}, format="json")
    response = client.get("/api/v1/jobs/team-a/j/logs/", query)
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]


def test_the_job_filters_are_documented_on_the_list_only(schema):
    # a submission takes only ?dry_run= (issue 34 item 2)
    assert query_parameters(schema, "/api/v1/jobs/", "post") == {"dry_run": {"type": "boolean"}}
    parameters = query_parameters(schema, "/api/v1/jobs/")
    dates = {"anyOf": [{"type": "string", "format": "date"},
                       {"type": "string", "format": "date-time"}]}  # fmt: skip
    assert parameters["since"] == parameters["until"] == dates
    assert "pattern" in parameters["status"]


@pytest.mark.parametrize(
    ("status", "taken"),
    [("Running", True), ("Succeeded, Failed", True), (" Pending ,", True), (",", True),
     ("Runing", False), ("Running Pending", False), ("running", False)],
)  # fmt: skip
def test_the_status_pattern_says_what_the_filter_takes(api, member, schema, status, taken):
    import re

    pattern = query_parameters(schema, "/api/v1/jobs/")["status"]["pattern"]
    assert bool(re.search(pattern, status)) is taken
    assert (api(member).get("/api/v1/jobs/", {"status": status}).status_code == 200) is taken


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
                                    "0001-01-01", "9999-12-31"])  # fmt: skip
def test_dates_at_the_ends_of_the_calendar_are_answered_not_a_500(api, member, moment):
    client = api(member)
    for field in ("since", "until"):
        assert client.get("/api/v1/jobs/", {field: moment}).status_code == 200, (field, moment)


def test_an_accounting_project_the_user_may_not_see_is_a_404_naming_it(api, member, team_b):
    response = api(member).get("/api/v1/accounting/", {"project": "team-b"})
    assert response.status_code == 404
    assert response.json() == {"project": ["no project 'team-b' among those you may see"]}
    bad = api(member).get("/api/v1/accounting/", {"project": "team-b", "until": "soon"})
    assert bad.status_code == 400 and set(bad.json()) == {"project", "until"}


# --- bodies --------------------------------------------------------------------------------------


def test_an_empty_bulk_submission_is_a_400_and_the_schema_says_one_to_a_thousand(
    api, member, schema
):
    response = api(member).post("/api/v1/jobs/bulk/", {"jobs": []}, format="json")
    assert response.status_code == 400 and "jobs" in response.json()
    jobs = schema["components"]["schemas"]["BulkJobsRequest"]["properties"]["jobs"]
    assert (jobs["minItems"], jobs["maxItems"]) == (1, 1000)


def test_a_nul_in_a_key_is_a_400_naming_where_and_the_schema_says_so(api, member, schema):
    body = {"project": "team-a", "name": "x", "extra": [{"a\u0000b": 1}]}
    response = api(member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"body": ["a key of extra[0] contains a NUL character"]}
    assert "NUL character (U+0000)" in schema["info"]["description"]


# --- objects named in a body ---------------------------------------------------------------------


def test_a_member_who_is_no_user_is_a_404_naming_the_username(api, owner):
    body = {"username": "nobody", "role": "viewer"}
    response = api(owner).post("/api/v1/projects/team-a/members/", body, format="json")
    assert response.status_code == 404
    assert response.json() == {"username": ["no user named 'nobody'"]}


def test_a_rule_for_no_project_is_a_404_and_a_project_that_is_no_string_a_400(
    api, cluster_admin, team_a
):
    client = api(cluster_admin)
    missing = client.post("/api/v1/sso/rules/", {"group": "g", "project": "nope"}, format="json")
    assert missing.status_code == 404
    assert missing.json() == {"project": ["No project named 'nope'."]}
    Project = type(team_a)
    Project.objects.create(name="0", quota=1)
    number = client.post("/api/v1/sso/rules/", {"group": "g", "project": 0}, format="json")
    assert number.status_code == 400
    assert number.json() == {"project": ["must be a string, the name of one."]}
    both = client.post("/api/v1/sso/rules/", {"group": "", "project": "nope"}, format="json")
    assert both.status_code == 400 and set(both.json()) == {"group", "project"}


def test_a_patch_body_does_not_offer_the_name_fixed_at_creation(schema):
    components = schema["components"]["schemas"]
    for name in ("Node", "Project"):
        assert "name" in components[f"{name}Request"]["properties"]
        assert "name" not in components[f"Patched{name}Request"]["properties"]


def test_an_account_without_email_conforms_to_the_schema(api, cluster_admin, schema):
    import jsonschema

    account = api(cluster_admin).get("/api/v1/users/root/").json()
    assert account["email"] == ""
    email = schema["components"]["schemas"]["Account"]["properties"]["email"]
    checker = jsonschema.Draft4Validator.FORMAT_CHECKER
    jsonschema.validate("", {k: v for k, v in email.items() if k != "readOnly"},
                        format_checker=checker)  # fmt: skip


# --- moments the database could not take, and empty values ---------------------------------------


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/jobs/", "since"), ("/api/v1/accounting/", "until"),
     ("/api/v1/analytics/allocation/", "to")],
)  # fmt: skip
def test_an_offset_past_postgresqls_15_59_is_answered_not_a_500(api, member, path, field):
    response = api(member).get(path, {field: "2353-01-24T14:22:31.56+16:02"})
    assert response.status_code in (200, 400), response.content  # never the DataError's 500
    early = api(member).get("/api/v1/jobs/", {"since": "0001-01-01T00:00:00+23:59"})
    assert early.status_code == 200


def test_an_audit_time_with_a_large_offset_is_answered(api, cluster_admin):
    response = api(cluster_admin).get("/api/v1/audit/", {"until": "2030-01-01T00:00:00-23:59"})
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/jobs/", "until"), ("/api/v1/jobs/", "since"), ("/api/v1/accounting/", "until"),
     ("/api/v1/analytics/allocation/", "from")],
)  # fmt: skip
def test_an_empty_moment_is_a_400_naming_it(api, member, path, field):
    response = api(member).get(path, {field: ""})
    assert response.status_code == 400
    assert list(response.json()) == [field] and "not empty" in response.json()[field][0]


def test_an_empty_audit_address_is_a_400_naming_it(api, cluster_admin):
    response = api(cluster_admin).get("/api/v1/audit/", {"address": " "})
    assert response.status_code == 400 and response.json() == {
        "address": ["must be an IP address, not empty"]
    }


def test_a_webhook_url_the_schema_offers_is_one_the_api_takes(api, owner, schema):
    import re

    pattern = schema["components"]["schemas"]["WebhookRequest"]["properties"]["url"]["pattern"]
    client = api(owner)
    for url in ("https://0.com", "http://hooks.example-a.invalid/a/b.c"):
        assert re.search(pattern, url)
        made = client.post("/api/v1/projects/team-a/webhooks/", {"url": url}, format="json")
        assert made.status_code == 201, made.content
    for url in ("http://127.0.0.1/", "ftp://a.com", "https://a.com:99999/"):
        assert not re.search(pattern, url)
        refused = client.post("/api/v1/projects/team-a/webhooks/", {"url": url}, format="json")
        assert refused.status_code == 400 and "url" in refused.json()


def test_a_not_found_project_in_the_accounting_csv_is_a_documented_404(api, member, schema):
    content = schema["paths"]["/api/v1/accounting/"]["get"]["responses"]["404"]["content"]
    assert "text/csv" in content
    response = api(member).get("/api/v1/accounting/", {"project": "nope", "format": "csv"})
    assert response.status_code == 404 and response["Content-Type"].startswith("text/csv")


# --- JSON types ----------------------------------------------------------------------------------


def test_text_fields_take_strings_and_number_fields_numbers(api, cluster_admin, team_a, nodes):
    client = api(cluster_admin)
    node = client.post("/api/v1/nodes/", {"name": "n1", "gpus": 8, "pool": 0}, format="json")
    assert node.status_code == 400
    assert node.json() == {"pool": ["must be a string, not a number"]}
    project = client.patch("/api/v1/projects/team-a/", {"idle_threshold": "0.5", "quota": True},
                           format="json")  # fmt: skip
    assert project.status_code == 400
    assert project.json() == {"idle_threshold": ["must be a number, not a string"],
                              "quota": ["must be a number, not a boolean"]}  # fmt: skip
    assert client.patch("/api/v1/projects/team-a/", {"idle_threshold": 0.5},
                        format="json").status_code == 200  # fmt: skip
    rule = client.post("/api/v1/sso/rules/", {"group": 0, "project": "team-a"}, format="json")
    assert rule.status_code == 400 and rule.json() == {"group": ["must be a string, not a number"]}
    member = client.post("/api/v1/projects/team-a/members/", {"username": 0}, format="json")
    assert member.status_code == 400 and list(member.json()) == ["username"]


def test_list_items_are_of_the_lists_type(api, member, nodes):
    body = {"project": "team-a", "name": "j", "gpus": 1, "args": ["--lr", 0.1]}
    response = api(member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"args": ["item 1: must be a string, not a number"]}


def test_every_request_body_is_read_by_a_serializer_taking_json_types_only():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.plumbing import force_instance

    from portal.api.fields import StrictTypesMixin

    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)
    bodies = {name: force_instance(component.object) for (name, kind), component
              in generator.registry._components.items()
              if kind == "schemas" and name.endswith("Request")}  # fmt: skip
    assert len(bodies) >= 10, sorted(bodies)
    lenient = [name for name, serializer in bodies.items()
               if isinstance(serializer, serializers.BaseSerializer)
               and not isinstance(serializer, StrictTypesMixin)]  # fmt: skip
    assert lenient == []
    assert lenient == []


def test_the_web_forms_still_save_numbers_typed_as_text(client, cluster_admin, team_a):
    client.force_login(cluster_admin)
    form = {"quota": "2.5", "idle_threshold": "0.2"}
    response = client.post(f"/projects/{team_a.name}/edit/", form)
    assert response.status_code == 302, response.content[:300]
    team_a.refresh_from_db()
    assert (float(team_a.quota), team_a.idle_threshold) == (2.5, 0.2)


# --- the rest of the query strings ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/jobs/", "type"), ("/api/v1/jobs/", "ordering"), ("/api/v1/accounting/", "period"),
     ("/api/v1/accounting/", "group_by")],
)  # fmt: skip
def test_an_empty_choice_is_a_400_naming_it(api, member, path, field):
    response = api(member).get(path, {field: ""})
    assert response.status_code == 400 and list(response.json()) == [field]


def test_the_audit_csv_checks_page_and_page_size_too(api, cluster_admin):
    client = api(cluster_admin)
    assert client.get("/api/v1/audit/", {"format": "csv", "page": "0"}).status_code == 400
    assert client.get("/api/v1/audit/", {"format": "csv", "page": "2"}).status_code == 200


@pytest.mark.parametrize(("expires_in", "taken"), [("90m", True), ("999d", True), ("99w", True),
                                                   ("0m", False), ("1y", False)])  # fmt: skip
def test_a_token_expiry_the_schema_offers_is_one_the_api_takes(api, member, schema, expires_in,
                                                               taken):  # fmt: skip
    import re

    body = schema["components"]["schemas"]["TokenRequestRequest"]["properties"]["expires_in"]
    pattern = body["anyOf"][0]["pattern"]
    assert bool(re.search(pattern, expires_in)) is taken
    login = {"username": "bob", "password": "x-test-password-1", "expires_in": expires_in}
    assert (api().post("/api/v1/auth/token/", login, format="json").status_code == 200) is taken


def test_an_unknown_node_pool_is_a_404_naming_it(api, cluster_admin, team_a, nodes):
    response = api(cluster_admin).patch("/api/v1/projects/team-a/", {"node_pools": ["gpu-x"]},
                                        format="json")  # fmt: skip
    assert response.status_code == 404
    assert response.json() == {"node_pools": ["unknown node pool 'gpu-x' (known: default)"]}


def test_the_schema_says_a_job_gives_gpus_or_gpu_memory_one_of_them(api, member, nodes, schema):
    job = schema["components"]["schemas"]["JobRequest"]
    assert {"oneOf": [{"required": ["gpus"]}, {"required": ["gpu_memory"]}]} in job["allOf"]
    client = api(member)
    body = {"project": "team-a", "name": "j", "gpus": 1, "gpu_memory": "16Gi"}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400 and list(response.json()) == ["gpu_memory"]
    neither = client.post("/api/v1/jobs/", {"project": "team-a", "name": "j"}, format="json")
    assert neither.status_code == 400 and list(neither.json()) == ["gpus"]


def test_names_carry_their_dns_pattern_in_the_schema(schema):
    components = schema["components"]["schemas"]
    label, subdomain = (components["ProjectRequest"]["properties"]["name"]["pattern"],
                        components["NodeRequest"]["properties"]["name"]["pattern"])  # fmt: skip
    assert components["JobRequest"]["properties"]["name"]["pattern"] == label
    assert label == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" and "\\." in subdomain


@pytest.mark.parametrize(("quota", "kept"), [(999998.99, "999998.99"), (2.3, "2.30")])
def test_a_decimal_in_hundredths_is_taken(api, cluster_admin, team_a, quota, kept):
    response = api(cluster_admin).patch("/api/v1/projects/team-a/", {"quota": quota},
                                        format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    team_a.refresh_from_db()
    assert str(team_a.quota) == kept


def test_a_decimal_with_more_places_is_a_400_and_the_schema_says_hundredths(
    api, cluster_admin, team_a, schema
):
    prop = schema["components"]["schemas"]["PatchedProjectRequest"]["properties"]["limit"]
    assert prop["multipleOf"] == 0.01
    for limit in (9999998.999999998, 0.35000000000000003, 4.001):
        response = api(cluster_admin).patch("/api/v1/projects/team-a/", {"limit": limit},
                                            format="json")  # fmt: skip
        assert response.status_code == 400 and list(response.json()) == ["limit"], limit


def test_an_empty_department_is_a_400_and_null_means_none(api, cluster_admin, team_a):
    client = api(cluster_admin)
    refused = client.patch("/api/v1/projects/team-a/", {"department": ""}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"department": ["may not be empty: a name, or null for none"]}
    taken = client.patch("/api/v1/projects/team-a/", {"department": None}, format="json")
    assert taken.status_code == 200 and taken.json()["department"] is None


@pytest.mark.parametrize("pool", ["\n", " default", "default ", "Default", ""])
def test_a_node_pool_that_is_not_a_dns_label_is_a_400_and_the_schema_says_so(
    api, cluster_admin, team_a, nodes, schema, pool
):
    """Whitespace is not trimmed into another name (the schema's pattern refuses it too)."""
    response = api(cluster_admin).patch("/api/v1/projects/team-a/", {"node_pools": [pool]},
                                        format="json")  # fmt: skip
    assert response.status_code == 400 and list(response.json()) == ["node_pools"], pool
    items = schema["components"]["schemas"]["PatchedProjectRequest"]["properties"]["node_pools"]
    assert items["items"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert api(cluster_admin).patch("/api/v1/projects/team-a/", {"node_pools": ["default"]},
                                    format="json").status_code == 200  # fmt: skip


def test_the_schema_says_gpus_are_a_fraction_or_whole_and_a_mount_path_is_plain(schema):
    components = schema["components"]["schemas"]
    gpus = components["JobRequest"]["properties"]["gpus"]["anyOf"]
    assert {"type": "integer", "minimum": 1} in gpus
    assert {"type": "number", "minimum": 0, "maximum": 0.99, "multipleOf": 0.01} in gpus
    pattern = re.compile(components["VolumeRequest"]["properties"]["mount_path"]["pattern"])
    taken = ["/data", "/home/bob/.cache", "/a..b"]
    refused = ["/", "data", "/data/", "//data", "/a/./b", "/a/../b", "/..", "/a\tb"]
    for path in taken:
        assert pattern.fullmatch(path) and validates(validate_mount_path, path), path
    for path in refused:
        assert not pattern.fullmatch(path) and not validates(validate_mount_path, path), path


def validates(validator, value) -> bool:
    try:
        validator(value)
    except DjangoValidationError:
        return False
    return True


@pytest.mark.parametrize("name", ["A\n", "1A", "A-B", ""])
def test_an_environment_name_a_shell_would_not_take_is_a_400_and_the_schema_says_so(
    api, member, nodes, schema, name
):
    job = {"project": "team-a", "name": "env", "gpus": 1, "environment": {name: "x"}}
    response = api(member).post("/api/v1/jobs/", job, format="json")
    assert response.status_code == 400 and list(response.json()) == ["environment"], name
    environment = schema["components"]["schemas"]["JobRequest"]["properties"]["environment"]
    assert environment["propertyNames"] == {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}


def test_an_environment_value_that_is_not_a_string_is_a_400_naming_it(api, member, nodes):
    job = {"project": "team-a", "name": "env", "gpus": 1, "environment": {"A": 0}}
    response = api(member).post("/api/v1/jobs/", job, format="json")
    assert response.status_code == 400
    assert response.json() == {"environment": ["'A': must be a string, not a number"]}
