// PUT /apps/:name/install end to end (HTTP -> topic -> stage -> reply) at a fixed offered rate,
// across many tenants, with reads of the same tenants' apps running beside the writes.
//
//   TARGET      base URL                                  (default http://127.0.0.1:8080)
//   TOKENS      comma-separated admin tokens, one per tenant
//   VERSION_ID  the version every install runs (the platform example app)
//   APP         app name                                  (default vendor-app)
//   RATE        installs offered per second               (default 500)
//   READ_RATE   reads offered per second beside them      (default 100; 0: none)
//   DURATION    (default 60s)
//
// Each install request is a different body: the tenant's base URL and threshold change, and one
// in ten disables the install (an enabled install needs its secret stored, which the script
// `loadtests/install` does first). Every answer must be 200.
import http from 'k6/http';
import { check } from 'k6';

const target = __ENV.TARGET || 'http://127.0.0.1:8080';
const tokens = (__ENV.TOKENS || '').split(',').filter((t) => t.length > 0);
const versionId = __ENV.VERSION_ID || '';
const app = __ENV.APP || 'vendor-app';
const rate = Number(__ENV.RATE || 500);
const readRate = Number(__ENV.READ_RATE || 100);
const duration = __ENV.DURATION || '60s';

const scenarios = {
  install: {
    executor: 'constant-arrival-rate',
    exec: 'install',
    rate,
    timeUnit: '1s',
    duration,
    // Enough callers that a slow answer never holds the offered rate back (500/s at 0.5 s each).
    preAllocatedVUs: Math.max(50, Math.ceil(rate / 4)),
    maxVUs: Math.max(200, rate),
  },
};
if (readRate > 0) {
  scenarios.reads = {
    executor: 'constant-arrival-rate',
    exec: 'read',
    rate: readRate,
    timeUnit: '1s',
    duration,
    preAllocatedVUs: 20,
    maxVUs: 100,
  };
}

export const options = {
  scenarios,
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
  // Thresholds on the tagged series make k6 report each scenario on its own.
  thresholds: {
    'http_req_duration{scenario:install}': ['max>=0'],
    'http_req_duration{scenario:reads}': ['max>=0'],
    'checks{scenario:install}': ['rate>=0'],
    // Answers by status, for the fault runs (loadtests/broker-loss/run: 503 while the broker is away).
    'http_reqs{scenario:install,status:200}': ['count>=0'],
    'http_reqs{scenario:install,status:503}': ['count>=0'],
    'http_reqs{scenario:install,status:504}': ['count>=0'],
    'checks{scenario:reads}': ['rate>=0'],
  },
};

function tokenFor(n) {
  return tokens[n % tokens.length];
}

function draw(below) {
  return Math.floor(Math.random() * below);
}

export function install() {
  const body = JSON.stringify({
    versionId,
    enabled: draw(10) !== 0,
    config: {
      baseUrl: `https://api.example-kyc.test/tenants/${draw(997)}`,
      threshold: draw(100) / 100,
    },
  });
  const response = http.put(`${target}/apps/${app}/install`, body, {
    headers: { Authorization: `Bearer ${tokenFor(draw(1e9))}`, 'Content-Type': 'application/json' },
  });
  check(response, { 'install answered 200': (r) => r.status === 200 });
}

const READS = [`/apps`, `/apps/${app}`, `/apps/${app}/versions`];

export function read() {
  const response = http.get(`${target}${READS[draw(READS.length)]}`, {
    headers: { Authorization: `Bearer ${tokenFor(draw(1e9))}` },
  });
  check(response, { 'read answered 200': (r) => r.status === 200 });
}
