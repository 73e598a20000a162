// The fault runs' load (loadtests/faults): four kinds of command at fixed offered rates, each
// request named by its own x-request-id and each answer written to the console output as one
// line, `answer <kind> <request id> <status> <ref> <ms> <answered at, epoch ms>`, for the
// reconciliation (reconcile.py) to match every accepted answer with its effect in Postgres.
//
//   TARGET          base URL of the API
//   PREFIX          unique per run: request ids, case titles and webhook sessions carry it
//   INSTALL_TOKENS  comma-separated admin tokens (tenants with vendor-app's secret stored)
//   VERSION_ID      the catalogue's vendor-app version the installs run
//   RUN_TOKEN       admin token of the runs' tenant; RUN_KEY its published workflow
//   WEBHOOK_SESSIONS how many pending sessions `${PREFIX}-s-<n>` were opened for the webhooks
//   INSTALL_RATE, RUN_RATE, CASE_RATE, WEBHOOK_RATE   per second (0: none)
//   DURATION        e.g. 60s
//
// install: PUT /apps/vendor-app/install (200; a config of its own each time)
// run:     POST /workflow-runs (202, ref: the run id)
// case:    POST /cases (201, ref: the case id)
// webhook: POST /webhooks/apps/vendor-app completing session n with event n (202 received;
//          ref: the event id)
import http from 'k6/http';
import exec from 'k6/execution';

const target = __ENV.TARGET || 'http://127.0.0.1:8080';
const prefix = __ENV.PREFIX || 'faults';
const installTokens = (__ENV.INSTALL_TOKENS || '').split(',').filter((t) => t.length > 0);
const versionId = __ENV.VERSION_ID || '';
const runToken = __ENV.RUN_TOKEN || '';
const runKey = __ENV.RUN_KEY || '';
const sessions = Number(__ENV.WEBHOOK_SESSIONS || 0);
const duration = __ENV.DURATION || '60s';

function scenario(exec, rate) {
  return {
    executor: 'constant-arrival-rate',
    exec,
    rate,
    timeUnit: '1s',
    duration,
    // An outage holds answers for seconds: enough callers that the offered rate holds.
    preAllocatedVUs: Math.max(20, rate * 2),
    maxVUs: Math.max(100, rate * 30),
  };
}

const scenarios = {};
for (const [name, fn, rate] of [
  ['install', 'install', Number(__ENV.INSTALL_RATE || 0)],
  ['run', 'run', Number(__ENV.RUN_RATE || 0)],
  ['case', 'openCase', Number(__ENV.CASE_RATE || 0)],
  ['webhook', 'webhook', Number(__ENV.WEBHOOK_RATE || 0)],
]) {
  if (rate > 0) scenarios[name] = scenario(fn, rate);
}

export const options = {
  scenarios,
  summaryTrendStats: ['med', 'p(99)', 'max'],
};

// A request unanswered this long counts as hung (status 0 in the output).
const PARAMS_TIMEOUT = '60s';

function draw(below) {
  return Math.floor(Math.random() * below);
}

function requestId(kind) {
  return `${prefix}-${kind}-${exec.scenario.iterationInTest}`;
}

function send(kind, method, path, body, token) {
  const id = requestId(kind);
  const headers = { 'content-type': 'application/json', 'x-request-id': id };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = http.request(method, `${target}${path}`, body, {
    headers,
    timeout: PARAMS_TIMEOUT,
    tags: { kind },
  });
  return { id, response };
}

function field(response, name) {
  try {
    return response.json(name);
  } catch (_) {
    return null;
  }
}

function record(kind, id, response, ref) {
  // One plain line per answer: `answer <kind> <request id> <status> <ref or -> <ms> <epoch ms>`.
  const ms = Math.round(response.timings.duration);
  console.log(`answer ${kind} ${id} ${response.status} ${ref || '-'} ${ms} ${Date.now()}`);
}

export function install() {
  const token = installTokens[draw(installTokens.length)];
  const body = JSON.stringify({
    versionId,
    config: { baseUrl: `https://api.example-kyc.test/${prefix}/${exec.scenario.iterationInTest}` },
  });
  const { id, response } = send('install', 'PUT', '/apps/vendor-app/install', body, token);
  record('install', id, response, null);
}

export function run() {
  // The run's context names its request, so a run answered 504 (on the log, applied later)
  // is found too.
  const id = requestId('run');
  const body = JSON.stringify({
    definitionKey: runKey,
    context: { faultRequest: id, subject: { name: `Ada ${exec.scenario.iterationInTest}`, country: 'GB' } },
  });
  const { response } = send('run', 'POST', '/workflow-runs', body, runToken);
  record('run', id, response, field(response, 'id'));
}

export function openCase() {
  const token = installTokens[draw(installTokens.length)];
  // The title is the request id, so a case answered 504 is found too.
  const id = requestId('case');
  const body = JSON.stringify({ type: 'fault_review', title: id, priority: 'low', slaHours: 24 });
  const { response } = send('case', 'POST', '/cases', body, token);
  record('case', id, response, field(response, 'id'));
}

export function webhook() {
  const n = exec.scenario.iterationInTest % Math.max(1, sessions);
  const eventId = `${prefix}-e-${exec.scenario.iterationInTest}`;
  const body = JSON.stringify({ sessionId: `${prefix}-s-${n}`, eventId, result: 'approved' });
  const { id, response } = send('webhook', 'POST', '/webhooks/apps/vendor-app', body, null);
  record('webhook', id, response, eventId);
}
