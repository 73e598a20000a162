// GET /app-callbacks over seeded sessions, as analysts bring it: each request picks a tenant (of
// PLAN), one of six filter combinations, and a page from 1 to 20 (limit 50, with totals).
//
//   TARGET    base URL (default http://127.0.0.1:18080)
//   PLAN      JSON file: [{"token", "apps": [...], "runs": [...]}] per tenant
//   VUS, DURATION; RATE (constant arrival rate) or none (saturation): see ../list_pages.js
//   FILTERS   some of tenant,app,status,pending,run,app_status (default: all, equally often)
import http from 'k6/http';
import { check } from 'k6';
import { options, pick } from '../list_pages.js';

const target = __ENV.TARGET || 'http://127.0.0.1:18080';
const plan = JSON.parse(open(__ENV.PLAN));
export { options };
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
