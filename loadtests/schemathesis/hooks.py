"""Schemathesis hooks of loadtests/schemathesis/run (SCHEMATHESIS_HOOKS names this module).

The run uses every check of schemathesis (`--checks all`), `positive_data_acceptance` and
`negative_data_rejection` included: the document (schema/openapi.json) states every cap,
pattern and nullability the handlers apply. What is here works around the tool, each with why:

- `POST /apps/uploads` takes a module as `application/wasm`: its generated bodies go as the
  bytes they are, as schemathesis sends `application/octet-stream`.
- `before_load_schema` hands the tool the document's one recursive schema unrolled, as it
  cannot generate from recursion.
- `filter_failure` sets aside the few "API rejected schema-compliant request" failures whose
  refusal rests on something no OpenAPI document can state (a rule between two parameters,
  between the path and the body, or on what the tenant holds) or that the tool made itself (a
  `null` it carried over from a response). Each is matched by operation and by the exact
  refusal the route answers for that reason alone; a refusal with any other issue beside it
  still fails the run. It also sets aside "API accepted schema-violating request" for a
  document's bytes whose violation exists only in the generator's value, not on the wire.
  The run prints how many failures each rule set aside, by operation (`set-aside.txt`).
"""

import copy
import os
import re

import jsonschema_rs
import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.core.parameters import ParameterLocation
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.transport.requests import serialize_binary


@schemathesis.serializer("application/wasm")
def wasm(ctx, value):
    return {"data": serialize_binary(value)}


# The document states "no U+0000 in any string or member name of a JSON body" (body::json
# refuses one, Postgres cannot store it) with one recursive schema, `StorableJson`, for the
# bodies' free-form values (`input`, `context`, `config`, a condition's `value`). Schemathesis
# 4.31.1 cannot generate from a recursive schema: its fuzzing phase fails with "maximum
# recursion depth exceeded" (POST /workflow-runs' `context`). The tool is handed the same
# schema unrolled to STORABLE_DEPTH levels; below the last one, any JSON but a string holding
# U+0000. The document itself stays exact, and a U+0000 the tool puts below those levels is
# judged by it (`_body_the_document_refuses`).
STORABLE = "StorableJson"
STORABLE_DEPTH = 3


def _unrolled(node, level):
    if isinstance(node, dict):
        if node.get("$ref") == f"#/components/schemas/{STORABLE}":
            return {**node, "$ref": f"#/components/schemas/{STORABLE}{level + 1}"}
        return {key: _unrolled(value, level) for key, value in node.items()}
    if isinstance(node, list):
        return [_unrolled(item, level) for item in node]
    return node


# The document as served, before the tool's copy is unrolled: what filter_failure judges by.
EXACT = {}


@schemathesis.hook
def before_load_schema(ctx, raw_schema):
    EXACT["document"] = copy.deepcopy(raw_schema)
    schemas = raw_schema.get("components", {}).get("schemas", {})
    recursive = schemas.get(STORABLE)
    if recursive is None:
        return
    no_nul = next(
        branch["pattern"] for branch in recursive["anyOf"] if branch.get("type") == "string"
    )
    for level in range(1, STORABLE_DEPTH):
        schemas[f"{STORABLE}{level}"] = _unrolled(recursive, level)
    schemas[f"{STORABLE}{STORABLE_DEPTH}"] = {
        "anyOf": [
            {"type": ["null", "boolean", "number", "array", "object"]},
            {"type": "string", "pattern": no_nul},
        ]
    }
    schemas[STORABLE] = _unrolled(recursive, 0)


def _error(response):
    try:
        error = response.json()["error"]
    except Exception:
        return None
    return error if isinstance(error, dict) else None


def _issues(response):
    """The `(in, path, message)` of each issue of a 400 `validation_error`, or None."""
    error = _error(response)
    if response.status_code != 400 or error is None or error.get("code") != "validation_error":
        return None
    details = error.get("details")
    issues = details.get("issues") if isinstance(details, dict) else None
    if not isinstance(issues, list) or not issues:
        return None
    return [(issue.get("in"), issue.get("path"), issue.get("message", "")) for issue in issues]


def _only(response, allowed):
    """Whether the answer is a `validation_error` whose every issue is one `allowed` admits."""
    issues = _issues(response)
    return issues is not None and all(allowed(*issue) for issue in issues)


# `from` after `to`: each is a date-time alone, the order between them is not something a
# parameter's schema can say.
REVERSED_BOUNDS = {
    "GET /app-invocations": ("query", "to", "must not be before from"),
    "GET /audit-events": ("query", "from", "must not be after to"),
    "GET /audit-events/export": ("query", "from", "must not be after to"),
}


def _bounds_reversed(case, response):
    refusal = REVERSED_BOUNDS.get(case.operation.label)
    return refusal is not None and _only(response, lambda *issue: issue == refusal)


# `GET /backtests` filters by one key: ruleKey, ruleSetKey or workflowKey, each optional on its
# own. "At most one of these parameters" is not something a parameter's schema can say.
BACKTEST_KEYS = ("ruleKey", "ruleSetKey", "workflowKey")


def _two_backtest_keys(case, response):
    if case.operation.label != "GET /backtests":
        return False
    given = [name for name in BACKTEST_KEYS if (case.query or {}).get(name) is not None]
    return len(given) > 1 and _only(
        response,
        lambda at, name, message: at == "query"
        and name in BACKTEST_KEYS
        and message == "name one of ruleKey, ruleSetKey and workflowKey",
    )


# The body a new definition version takes depends on the `kind` in its path (a workflow's
# `{steps}`, a rule, a rule set's `{rules}`, a collection flow's `{workflow}`); the document
# gives the body as one of the four, and a schema cannot tie the choice to a path parameter. A
# generated body of another kind's shape is refused for that reason: the kind's own reader names
# the first field it does not take. (About three in four of the operation's valid cases are
# such. Steering the generator instead, with a `filter_case` or `map_case` hook, made
# schemathesis 4.31.1 send the token it was told to leave out in the coverage phase's
# missing-header case.)
BODY_KINDS = {
    "steps": "workflow",
    "rules": "rule_set",
    "workflow": "collection_flow",
    "type": "rule",
}


def _body_of_another_kind(case, response):
    if case.operation.label != "POST /definitions/{kind}/{key}/versions":
        return False
    body = case.body if isinstance(case.body, dict) else {}
    shapes = {BODY_KINDS[field] for field in body if field in BODY_KINDS}
    kind = (case.path_parameters or {}).get("kind")
    return len(shapes) == 1 and kind not in shapes and _only(
        response, lambda at, name, message: at == "body"
    )


# A secret may be stored only under a name the app's installed or published versions declare
# (SPEC §4.7 rule 1): which names those are depends on the app's manifests, not on the
# document.
def _secret_the_app_does_not_name(case, response):
    if case.operation.label != "POST /apps/{name}/secrets/{secret}":
        return False
    return _only(
        response,
        lambda at, name, message: (at, name) == ("path", "secret")
        and message.startswith("neither the installed version nor a published version of "),
    )


# A vendor webhook's external id comes from `?externalId=` or from where the app's newest
# published version declares it (SPEC §4.8 step 1); without either the answer is 400
# `missing_external_id`. Where a version declares it is the manifest's, not the document's.
def _no_external_id(case, response):
    if case.operation.label not in (
        "POST /webhooks/apps/{app}",
        "POST /webhooks/apps/{app}/tenants/{tenantId}",
    ):
        return False
    error = _error(response)
    return (
        response.status_code == 400
        and error is not None
        and error.get("code") == "missing_external_id"
        and not (case.query or {}).get("externalId")
    )


# An upload is a WebAssembly module: generated bytes are not one, and the route refuses them
# with the reasons SPEC §4.11 lists. "Valid WebAssembly" is not something a schema can say of a
# binary body.
MODULE_REFUSALS = {
    "not_wasm",
    "invalid_module",
    "forbidden_import",
    "imported_memory",
    "missing_export",
}


def _not_a_module(case, response):
    if case.operation.label != "POST /apps/uploads":
        return False
    error = _error(response)
    details = error.get("details") if error else None
    return (
        response.status_code == 400
        and error is not None
        and error.get("code") == "validation_error"
        and isinstance(details, dict)
        and details.get("code") in MODULE_REFUSALS
    )


# Stateful links schemathesis infers from a list's items (GET /cases' `workflowRunId`, which
# the document gives as a uuid or null) fill a path parameter with a null item as the text
# `None`: the link, not the document, made that request.
def _null_through_a_link(case, response):
    parameters = (case.path_parameters or {}).items()
    nulls = [name for name, value in parameters if value is None or value == "None"]
    return bool(nulls) and _only(
        response, lambda at, name, message: at == "path" and name in nulls
    )


# A run starts on the version the body names, or the published one: whether the workflow has
# it is the tenant's data, not the document's (400 with the issue at `/version` or
# `/definitionKey`).
NO_SUCH_RUN_VERSION = re.compile(r"workflow \S+ has no (version \d+|published version)")


def _no_such_workflow_version(case, response):
    if case.operation.label != "POST /workflow-runs":
        return False
    return _only(
        response,
        lambda at, name, message: at == "body"
        and name in ("/version", "/definitionKey")
        and NO_SUCH_RUN_VERSION.fullmatch(message) is not None,
    )


# A body the tool counts as valid data that the document, read whole, refuses: schemathesis
# fills body fields with values earlier responses held (its resource pool: a case's `subjectId`
# as GET /cases answered it, `null` for a case without a subject) and lets a `null` through
# unchecked though the field's schema has no null; and a U+0000 it put below the levels of
# `StorableJson` it was shown (see before_load_schema) is one the whole document refuses. The
# request then counts as valid data, and the route's refusal of it (every issue in the body) as
# a rejection. Judged by the document as served, its recursive schema validated as it is.
EXACT_VALIDATORS = {}


def _body_the_document_refuses(case, response):
    if "document" not in EXACT or not _only(response, lambda at, name, message: at == "body"):
        return False
    key = (case.method.lower(), case.operation.path)
    if key not in EXACT_VALIDATORS:
        document = EXACT["document"]
        operation = document["paths"][case.operation.path][key[0]]
        content = operation.get("requestBody", {}).get("content", {})
        body = content.get("application/json", {}).get("schema")
        EXACT_VALIDATORS[key] = body and jsonschema_rs.Draft202012Validator(
            {**body, "components": document["components"]}
        )
    validator = EXACT_VALIDATORS[key]
    return bool(validator) and not validator.is_valid(case.body)


BEYOND_THE_DOCUMENT = (
    _bounds_reversed,
    _two_backtest_keys,
    _body_of_another_kind,
    _secret_the_app_does_not_name,
    _no_external_id,
    _not_a_module,
    _null_through_a_link,
    _no_such_workflow_version,
    _body_the_document_refuses,
)


# `POST /subjects/{subjectId}/documents` stores the body's bytes as they are, of any media type
# (`*/*`): every byte string but the empty one is a document, and the route answers 201 only for
# bytes it received. A body drawn as another JSON type ("violates `type`: was string, became
# integer") or as the empty string ("smaller than minLength") still reaches it as non-empty bytes
# (`15102`, or `""` under `application/json`): the violation exists in the generator's value,
# not on the wire.
def _bytes_as_sent(case, response):
    if case.operation.label != "POST /subjects/{subjectId}/documents":
        return False
    if response.status_code != 201:
        return False
    components = case.meta.components.items()
    negative = [location for location, info in components if info.mode.is_negative]
    return negative == [ParameterLocation.BODY]


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    if isinstance(failure, RejectedPositiveData):
        rule = next((rule for rule in BEYOND_THE_DOCUMENT if rule(case, response)), None)
    elif isinstance(failure, AcceptedNegativeData):
        rule = _bytes_as_sent if _bytes_as_sent(case, response) else None
    else:
        rule = None
    if rule is None:
        return True
    _tally(rule.__name__, case.operation.label)
    return False


# How many failures each rule set aside, by operation: written beside the run's report
# (SET_ASIDE_REPORT, set by ./run), so a rule that starts to hide more than it should shows.
SET_ASIDE = {}


def _tally(rule, operation):
    SET_ASIDE[(rule, operation)] = SET_ASIDE.get((rule, operation), 0) + 1
    path = os.environ.get("SET_ASIDE_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as report:
            for (name, label), count in sorted(SET_ASIDE.items()):
                report.write(f"{count:6d}  {name:32s}  {label}\n")
