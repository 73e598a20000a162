// GET /app-invocations over a seeded history, as analysts bring it: each request picks a tenant
// (of TENANTS), one of five filter combinations, and a page from 1 to 20 (limit 50, with totals).
//
//   TARGET    base URL (default http://127.0.0.1:18080)
//   PLAN      JSON file: [{"token", "apps": [...], "runs": [...]}] per tenant
//   VUS, DURATION; RATE (constant arrival rate) or none (saturation): see ../list_pages.js
//   FILTERS   some of tenant,app,status,run,window (default: all five, equally often)
import http from 'k6/http';
import { check } from 'k6';
import { options, pick } from '../list_pages.js';

const target = __ENV.TARGET || 'http://127.0.0.1:18080';
const plan = JSON.parse(open(__ENV.PLAN));
export { options };
const DAY = 86400 * 1000;
const HISTORY = 3 * 365 * DAY;

// A window of one hour to two weeks somewhere in the three years, its ends anywhere in a day.
function window() {
  const length = 3600 * 1000 + Math.random() * 14 * DAY;
  const end = Date.now() - Math.random() * (HISTORY - length);
  return `from=${new Date(end - length).toISOString()}&to=${new Date(end).toISOString()}`;
}

const FILTERS = {
  tenant: () => '',
  app: (tenant) => `appName=${pick(tenant.apps)}`,
  status: () => 'status=error&status=timeout',
  run: (tenant) => `workflowRunId=${pick(tenant.runs)}`,
  window: () => window(),
};
// FILTERS=run,window (say) keeps only those combinations, to see what each one costs.
const filters = (__ENV.FILTERS || Object.keys(FILTERS).join(',')).split(',').map((f) => FILTERS[f]);

function query(tenant) {
  return pick(filters)(tenant);
}

export default function () {
  const tenant = pick(plan);
  const offset = 50 * Math.floor(Math.random() * 20);
  const filters = query(tenant);
  const url = `${target}/app-invocations?limit=50&offset=${offset}${filters ? '&' + filters : ''}`;
  const response = http.get(url, { headers: { Authorization: `Bearer ${tenant.token}` }, tags: { name: 'list' } });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
