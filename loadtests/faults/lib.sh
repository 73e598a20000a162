# Shared by the fault runs (loadtests/faults/*): an ingress and a pipeline of their own, the
# tenants and data mixed.js needs, the load itself, readiness read every second, and the fault's
# timeline.
# shellcheck shell=bash

PROFILE="${STACK_PROFILE:-release}"
[[ "$PROFILE" == dev ]] && BIN="$root/target/debug" || BIN="$root/target/release"
source "$root/loadtests/runs/lib.sh"

faults_pids=()
INGRESS_PID=""
faults_stop() {
  for pid in "${faults_pids[@]}" $INGRESS_PID; do kill -TERM "$pid" 2>/dev/null || true; done
  stop_stubs
}
trap faults_stop EXIT

# An ingress of the stack's build on API_BENCH_PORT, rate limiting off. Sets API_URL; answers
# its pid in INGRESS_PID (a fault run may kill it and call this again).
start_ingress() {
  local port="${API_BENCH_PORT:-18080}"
  STACK_PROFILE="$PROFILE" API_PORT="$port" API_INTERNAL_PORT="$((port + 1))" \
    API_RATE_LIMIT_PER_MINUTE=0 METRICS_PORT=0 LOG_LEVEL=warn "$root/stack" run ingress \
    >>"$results/ingress.log" 2>&1 9>&- &
  INGRESS_PID=$!
  API_URL="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "$API_URL/health" 2>/dev/null && return
    sleep 0.1
  done
  echo "faults: ingress did not start on $port" >&2
  exit 1
}

# A pipeline of the stack's build in place of the stack's own (stop_stack_pipeline first: the
# faults hit the one pipeline there is), a static member `$1` of its groups (empty: a new member
# each start), with FAILPOINTS `$2` (a test build's), its `/healthz` on port `$3` (0, the
# default: a port the kernel picks, which the script does not read). `exec` all the way down
# (`./stack run` execs the binary): PIPELINE_PID is the pipeline's. A crash is an abort: no core
# files (a debug binary's each).
PIPELINE_PID=""
start_pipeline() { # group-instance-id [failpoints [health port]]
  (unset API_URL TARGET; ulimit -c 0; STACK_PROFILE="$PROFILE" FAILPOINTS="${2:-}" \
    KAFKA_GROUP_INSTANCE_ID="$1" METRICS_PORT=0 WORKER_HEALTH_PORT="${3:-0}" LOG_LEVEL=warn \
    exec "$root/stack" run pipeline) >>"$results/pipeline.log" 2>&1 9>&- &
  PIPELINE_PID=$!
}

# Stops `$1` (SIGTERM, SIGKILL after 60 s) and waits until it is gone; one of our jobs is reaped
# quietly (bash would print a killed job's line).
stop_process() {
  local waited=0
  [[ -n "$1" ]] || return 0
  while kill -0 "$1" 2>/dev/null; do
    if ((waited < 300)); then kill -TERM "$1" 2>/dev/null || true; else kill -KILL "$1" 2>/dev/null || true; fi
    sleep 0.2
    waited=$((waited + 1))
  done
  wait "$1" 2>/dev/null || true
}
stop_pipeline() { stop_process "$PIPELINE_PID"; }
stop_stack_pipeline() { stop_process "$(cat "$root/.stack/run/pipeline.pid" 2>/dev/null || true)"; }

# Our pipeline stopped, the stack's started again (`./stack up` with the caller's STACK_PROFILE
# and STACK_BUILD_TESTS: the build it was when the caller passes the stack's), its output in `$1`.
restore_stack() { # log file
  stop_pipeline
  (unset API_URL TARGET; "$root/stack" up) >>"$1" 2>&1 9>&- || true
}

admin_token() { # tenant
  "$BIN/ingress" mint-token --tenant "$1" --sub faults-admin --name "Faults admin" --role admin \
    --ttl 14400
}

call() { # token method path [json]
  curl -fsS -o /dev/null -X "$2" -H "authorization: Bearer $1" -H 'content-type: application/json' \
    ${4:+--data "$4"} "$API_URL$3"
}

# The data mixed.js needs: INSTALL_TOKENS (TENANTS tenants, vendor-app's secret stored and
# installed; their installs change, cases open there, sessions wait there), VERSION_ID,
# RUN_TOKEN and RUN_KEY (a tenant whose vendor-app calls the vendor stub on VENDOR_PORT, and a
# published one-step workflow), and SESSIONS pending callback sessions `$PREFIX-s-<n>`.
setup_faults_data() {
  local tenants="$1" sessions="$2" i tenant token tenant_list=()
  VERSION_ID="$(psql -At "$DATABASE_URL" -c "SELECT id FROM app_versions WHERE tenant_id IS NULL
    AND name = 'vendor-app' AND status = 'published' ORDER BY published_at DESC LIMIT 1")"
  [[ -n "$VERSION_ID" ]] || { echo "faults: no published vendor-app in the catalogue" >&2; exit 1; }
  INSTALL_TOKENS=""
  for i in $(seq 1 "$tenants"); do
    tenant="$(python3 -c 'import uuid; print(uuid.uuid4())')"
    token="$(admin_token "$tenant")"
    INSTALL_TOKENS="${INSTALL_TOKENS:+$INSTALL_TOKENS,}$token"
    tenant_list+=("$tenant")
    call "$token" POST /apps/vendor-app/secrets/API_KEY '{"value":"faults-secret-value"}'
    call "$token" PUT /apps/vendor-app/install \
      "{\"versionId\":\"$VERSION_ID\",\"config\":{\"baseUrl\":\"https://api.example-kyc.test\"}}"
  done
  tenant="$(python3 -c 'import uuid; print(uuid.uuid4())')"
  RUN_TOKEN="$(admin_token "$tenant")"
  RUN_KEY="faults"
  call "$RUN_TOKEN" POST /apps/vendor-app/secrets/API_KEY '{"value":"faults-secret-value"}'
  call "$RUN_TOKEN" PUT /apps/vendor-app/install \
    "{\"versionId\":\"$VERSION_ID\",\"config\":{\"baseUrl\":\"http://127.0.0.1:$VENDOR_PORT\"}}"
  local steps='[{"id": "kyc", "type": "call_app", "app": "vendor-app", "action": "check",
    "inputMapping": {"name": "subject.name", "country": "subject.country"}, "outputKey": "kyc"}]'
  call "$RUN_TOKEN" POST "/definitions/workflow/$RUN_KEY/versions" "{\"steps\": $steps}"
  call "$RUN_TOKEN" POST "/definitions/workflow/$RUN_KEY/versions/1/publish"
  printf '%s\n' "${tenant_list[@]}" "$tenant" >"$results/tenants.txt"
  local array
  array="{$(IFS=,; echo "${tenant_list[*]}")}"
  psql -q "$DATABASE_URL" -v ON_ERROR_STOP=1 <<SQL
INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, external_id,
  status, created_at)
SELECT gen_random_uuid(), ('$array'::uuid[])[1 + n % $tenants], 'vendor-app', '$VERSION_ID',
  'verify', '$PREFIX-s-' || n, 'pending', now()
FROM generate_series(0, $sessions - 1) n;
SQL
}

# Starts mixed.js for `$1` seconds at RATE per kind (0 turns a kind off), its answers in
# $results/answers.txt; its pid in LOAD_PID.
start_load() {
  TARGET="$API_URL" PREFIX="$PREFIX" INSTALL_TOKENS="$INSTALL_TOKENS" VERSION_ID="$VERSION_ID" \
    RUN_TOKEN="$RUN_TOKEN" RUN_KEY="$RUN_KEY" WEBHOOK_SESSIONS="$SESSIONS" \
    INSTALL_RATE="$INSTALL_RATE" RUN_RATE="$RUN_RATE" CASE_RATE="$CASE_RATE" \
    WEBHOOK_RATE="$WEBHOOK_RATE" DURATION="${1}s" \
    "$K6" run --quiet --summary-export "$results/k6.json" --console-output "$results/answers.txt" \
    "$root/loadtests/faults/mixed.js" >"$results/k6.txt" 2>&1 &
  LOAD_PID=$!
  faults_pids+=("$LOAD_PID")
}

# Readiness of the API (the stack's own ingress: ours may be away) and the pipeline once a
# second, as `ready <epoch ms> <api status> <pipeline status> <dependencies named, comma-separated>`.
watch_readiness() {
  local api pipeline named
  while true; do
    api="$(curl -s -o "$results/api-ready.json" -w '%{http_code}' --max-time 5 "$STACK_API_URL/health/ready" || true)"
    pipeline="$(curl -s -o "$results/pipeline-ready.json" -w '%{http_code}' --max-time 5 "$PIPELINE_URL/health/ready" || true)"
    named="$(cat "$results/api-ready.json" "$results/pipeline-ready.json" 2>/dev/null |
      python3 -c '
import json, sys
named = set()
for line in sys.stdin.read().replace("}{", "}\n{").splitlines():
    try:
        checks = json.loads(line).get("error", {}).get("details", {}).get("checks") or json.loads(line).get("checks") or {}
    except ValueError:
        continue
    named.update(k for k, v in checks.items() if v not in ("ok", "not configured"))
print(",".join(sorted(named)) or "-")')"
    echo "ready $(date +%s%3N) $api $pipeline $named"
    sleep 1
  done
}

# Starts what of the infrastructure is not running (./stack infra). Without our ingress's
# API_URL: ./stack writes the caller's exported values into .stack/env, and every later test
# and tool would reach a port that is gone.
stack_infra() {
  (unset API_URL TARGET; "$root/stack" infra) >>"$results/infra.txt" 2>&1 9>&-
}

# Records a moment of the fault's timeline: `event <name> <epoch ms>`.
event() { echo "event $1 $(date +%s%3N)" >>"$results/timeline.txt"; }
