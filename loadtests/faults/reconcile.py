"""Matches every answer of a fault run (mixed.js's console output) with its effect in Postgres.

    python3 reconcile.py ANSWERS PREFIX TENANTS_FILE [WAIT_SECONDS]

TENANTS_FILE: the run's tenant ids, one a line (the queries keep to them).

Accepted answers and their effects:
  install 200   exactly one audit event of the request (`app.installed` / `app.configured`)
  run 202       the run (its context names the request) exists and ended; its invocation
                records are attempts 1..n, once each
  case 201      the case (its title is the request id) exists, once
  webhook 202   the event is recorded, and settled its session

The outbox: every call that timed out (a timeout counts against the app's circuit) sent its
outcome to the circuits stage through the outbox and its relay, under the attempt's id; the
stage's inbox holds a row under that id once it applied it (once: a relayed copy is answered
from there).

Also counted, as the write path may apply them or not: answers 503/504 and requests that got no
answer (status 0: the connection dropped, e.g. an ingress killed); those applied must be applied
once. "Twice" anywhere is a failure: an audit action of one command recorded twice, an attempt
number recorded twice, a session settled twice.

Waits up to WAIT_SECONDS (default 300) for runs to end and effects to land, then prints a table
and a verdict line; exits 1 when something accepted is missing or something was applied twice.
"""

import collections
import os
import re
import subprocess
import sys
import time

ANSWER = re.compile(r"answer (\w+) (\S+) (\d+) (\S+) (\d+) (\d+)")
ACCEPTED = {"install": {200}, "run": {202}, "case": {201}, "webhook": {202}}


def psql(sql, stdin=None, variables=()):
    flags = [arg for name, value in variables for arg in ("-v", f"{name}={value}")]
    done = subprocess.run(
        ["psql", "-qAt", "-F", " ", "-v", "ON_ERROR_STOP=1", *flags, os.environ["DATABASE_URL"]],
        input=(stdin or "") + sql,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.split(" ") for line in done.stdout.splitlines() if line]


def read_answers(path):
    answers = []
    with open(path, errors="replace") as lines:
        for line in lines:
            found = ANSWER.search(line)
            if found:
                kind, rid, status, ref, ms, _at = found.groups()
                answers.append((kind, rid, int(status), ref, int(ms)))
    return answers


def load(answers):
    """The answers as a temp table `answered`, for the queries that follow in one session."""
    rows = "\n".join(f"{k}\t{i}\t{s}\t{r}\t{m}" for k, i, s, r, m in answers)
    return (
        "CREATE TEMP TABLE answered (kind text, request_id text, status int, ref text, ms int);\n"
        "COPY answered FROM STDIN;\n" + rows + "\n\\.\n"
    )


# The effects of the run's tenants (every query keeps to them: the history tables are large and
# not indexed by request id), keyed by the request that asked for them (an install's audit
# event, a run's context and a case's title carry it), a webhook's by its event id.
EFFECTS = """
CREATE TEMP TABLE effects AS
SELECT 'install' AS kind, request_id AS key, count(*) AS times FROM audit_events
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND action IN ('app.installed', 'app.configured')
    AND request_id LIKE :'prefix' || '-install-%' GROUP BY 2
UNION ALL
SELECT 'run', context->>'faultRequest', count(*) FROM workflow_runs
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND status IN ('completed', 'failed', 'cancelled')
    AND context->>'faultRequest' LIKE :'prefix' || '-run-%' GROUP BY 2
UNION ALL
SELECT 'case', title, count(*) FROM cases
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND title LIKE :'prefix' || '-case-%' GROUP BY 2
UNION ALL
SELECT 'webhook', event_id, count(*) FILTER (WHERE outcome = 'settled') FROM app_callback_events
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND app_name = 'vendor-app'
    AND event_id LIKE :'prefix' || '-e-%' GROUP BY 2;
SELECT a.kind, a.status, count(*), count(e.key) FILTER (WHERE e.times > 0),
  count(*) FILTER (WHERE e.times > 1)
FROM answered a LEFT JOIN effects e ON e.kind = a.kind
  AND e.key = CASE a.kind WHEN 'webhook' THEN a.ref ELSE a.request_id END
GROUP BY 1, 2 ORDER BY 1, 2;
"""

# Things applied twice, whatever was answered.
TWICE = """
SELECT 'audit actions of one command recorded twice', count(*) FROM (
  SELECT command_id FROM audit_events
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND command_id IS NOT NULL
    AND request_id LIKE :'prefix' || '-%'
  GROUP BY command_id, action HAVING count(*) > 1) t
UNION ALL
SELECT 'attempt numbers recorded twice', count(*) FROM (
  SELECT workflow_run_id, attempt FROM app_invocations
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND workflow_run_id IS NOT NULL
  GROUP BY 1, 2 HAVING count(*) > 1) t
UNION ALL
SELECT 'sessions settled twice', count(*) FROM (
  SELECT session_id FROM app_callback_events
  WHERE tenant_id = ANY(:'tenants'::uuid[]) AND app_name = 'vendor-app' AND outcome = 'settled'
  GROUP BY 1 HAVING count(*) > 1) t;
"""


# Calls that timed out, and those whose outcome the circuits stage never applied: the outcome
# travels through the outbox under the attempt's id (the invocation record's).
CIRCUIT = """
SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
         SELECT 1 FROM inbox WHERE inbox.command_id = i.id AND inbox.stage = 'circuits'))
FROM app_invocations i
WHERE i.tenant_id = ANY(:'tenants'::uuid[]) AND i.workflow_run_id IS NOT NULL
  AND i.status = 'timeout';
"""


def circuit_shortfall(variables):
    """(timeouts, how many of them the circuits stage has not applied)."""
    [[timeouts, unapplied]] = psql(CIRCUIT, variables=variables)
    return int(timeouts), int(unapplied)


def main():
    path, prefix = sys.argv[1], sys.argv[2]
    tenants = "{" + ",".join(open(sys.argv[3]).read().split()) + "}"
    wait = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    variables = (("tenants", tenants), ("prefix", prefix))
    answers = read_answers(path)
    if not answers:
        print(f"reconcile: no answers in {path}")
        return 1
    runs = [a for a in answers if a[0] == "run" and a[2] == 202]
    deadline = time.monotonic() + wait
    # Effects land after the answers: runs end, events settle. Wait until every accepted answer
    # has its effect, or the count stops moving for two minutes (a run whose call timed out
    # waits for its retry), or the wait is over.
    last, still = None, 0
    while True:
        rows = [row for row in psql(EFFECTS, load(answers), variables) if len(row) == 5]
        missing = sum(int(total) - int(found) for kind, status, total, found, _ in rows
                      if int(status) in ACCEPTED[kind])
        timeouts, unrelayed = circuit_shortfall(variables)
        missing += unrelayed
        if missing == 0 or time.monotonic() > deadline or still >= 60:
            break
        still = still + 1 if missing == last else 0
        last = missing
        time.sleep(2)
    twice = psql(TWICE, load(answers), variables)

    by_status = collections.Counter((a[0], a[2]) for a in answers)
    longest = collections.defaultdict(int)
    for kind, _, status, _, ms in answers:
        longest[(kind, status)] = max(longest[(kind, status)], ms)
    print("| kind | answer | requests | effect found | effect twice | longest answer (ms) |")
    print("|---|---|---|---|---|---|")
    lost = 0
    for kind, status, total, found, doubled in rows:
        status, total, found = int(status), int(total), int(found)
        accepted = status in ACCEPTED[kind]
        if accepted:
            lost += total - found
        label = f"{status}" + (" (accepted)" if accepted else "")
        print(f"| {kind} | {label} | {total:,} | {found:,} | {doubled} | {longest[(kind, status)]:,} |")
    # A call that timed out, and its outcome applied by the circuits stage through the outbox.
    print(f"| call outcome (outbox) | timeout | {timeouts:,} | {timeouts - unrelayed:,} | - | - |")
    lost += unrelayed
    applied_twice = sum(int(n) for *_, n in twice) + sum(int(r[4]) for r in rows)
    for row in twice:
        print(f"  {' '.join(row[:-1])}: {row[-1]}")
    accepted_total = sum(n for (kind, status), n in by_status.items() if status in ACCEPTED[kind])
    hung = sum(n for (kind, status), n in by_status.items() if status == 0)
    verdict = "PASS" if lost == 0 and applied_twice == 0 else "FAIL"
    print(
        f"reconcile: {verdict}: {len(answers):,} requests, {accepted_total:,} accepted, "
        f"{lost} accepted without their effect, {applied_twice} applied twice, "
        f"{hung} without an answer, {len(runs):,} runs started"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
