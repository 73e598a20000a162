// GET /audit-events over a seeded audit log, as auditors bring it: each request picks one of
// the 20 largest tenants, one of five filter combinations and a page from 1 to 10 (limit 50,
// with the capped total).
//
//   TARGET    base URL (default http://127.0.0.1:18080)
//   PLAN      JSON file: [{"token", "actors": [...]}] per tenant
//   VUS, DURATION; RATE (constant arrival rate) or none (saturation): see ../list_pages.js
import http from 'k6/http';
import { check } from 'k6';
import { options, pick } from '../list_pages.js';

const target = __ENV.TARGET || 'http://127.0.0.1:18080';
const plan = JSON.parse(open(__ENV.PLAN));
export { options };
const DAY = 86400 * 1000;
const HISTORY = 2 * 365 * DAY;
const ACTIONS = ['app.callback.received', 'app.tested', 'case.decided', 'case.sla.breached',
  'app.configured', 'workflow.published', 'rule.published', 'definition.approval.requested',
  'definition.approval.approved', 'app.secret.stored', 'app.installed'];

// A window of one hour to two weeks somewhere in the two years.
function window() {
  const length = 3600 * 1000 + Math.random() * 14 * DAY;
  const end = Date.now() - Math.random() * (HISTORY - length);
  return `from=${new Date(end - length).toISOString()}&to=${new Date(end).toISOString()}`;
}

const FILTERS = {
  tenant: () => '',
  action: () => `action=${pick(ACTIONS)}`,
  actions: () => `action=${pick(ACTIONS)}&action=${pick(ACTIONS)}`,
  actor: (tenant) => `actor=${pick(tenant.actors)}`,
  window: () => window(),
};
const filters = (__ENV.FILTERS || Object.keys(FILTERS).join(',')).split(',').map((f) => FILTERS[f]);

export default function () {
  const tenant = pick(plan);
  const offset = 50 * Math.floor(Math.random() * 10);
  const filter = pick(filters)(tenant);
  const url = `${target}/audit-events?limit=50&offset=${offset}${filter ? '&' + filter : ''}`;
  const response = http.get(url, { headers: { Authorization: `Bearer ${tenant.token}` }, tags: { name: 'audit' } });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
