// GET /app-callbacks over seeded sessions, as analysts bring it: each request picks a tenant (of
// PLAN), one of six filter combinations, and a page from 1 to 20 (limit 50, with totals).
//
//   TARGET    base URL (default http://127.0.0.1:18080)
//   PLAN      JSON file: [{"token", "apps": [...], "runs": [...]}] per tenant
//   VUS, DURATION; RATE (constant arrival rate) or none (saturation)
//   FILTERS   some of tenant,app,status,pending,run,app_status (default: all, equally often)
import http from 'k6/http';
import { check } from 'k6';

const target = __ENV.TARGET || 'http://127.0.0.1:18080';
const plan = JSON.parse(open(__ENV.PLAN));
const vus = Number(__ENV.VUS || 32);
const rate = Number(__ENV.RATE || 0);

export const options = {
  scenarios: {
    read: rate > 0
      ? { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration: __ENV.DURATION || '60s',
          preAllocatedVUs: vus, maxVUs: vus }
      : { executor: 'constant-vus', vus, duration: __ENV.DURATION || '60s' },
  },
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
  thresholds: { checks: ['rate>0.999'] },
};

const pick = (items) => items[Math.floor(Math.random() * items.length)];
const SETTLED = ['completed', 'failed', 'timed_out'];

const FILTERS = {
  tenant: () => '',
  app: (tenant) => `appName=${pick(tenant.apps)}`,
  status: () => `status=${pick(SETTLED)}`,
  // What an operator watches: the sessions still waiting.
  pending: () => 'status=pending',
  run: (tenant) => `workflowRunId=${pick(tenant.runs)}`,
  app_status: (tenant) => `appName=${pick(tenant.apps)}&status=${pick(SETTLED)}`,
};
// FILTERS=run,pending (say) keeps only those combinations, to see what each one costs.
const filters = (__ENV.FILTERS || Object.keys(FILTERS).join(',')).split(',').map((f) => FILTERS[f]);

export default function () {
  const tenant = pick(plan);
  const offset = 50 * Math.floor(Math.random() * 20);
  const query = pick(filters)(tenant);
  const url = `${target}/app-callbacks?limit=50&offset=${offset}${query ? '&' + query : ''}`;
  const response = http.get(url, { headers: { Authorization: `Bearer ${tenant.token}` }, tags: { name: 'list' } });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
