// GET /approvals/:id (loadtests/audit/run): with PLAN, a JSON file of [{token, approval}], a
// random request of the plan each time (many tenants, workflows of many sizes); else the one
// request TOKEN and APPROVAL name, repeated (the 200-step diff).
//
//   TARGET, PLAN or TOKEN and APPROVAL; VUS, DURATION; RATE or none (saturation): see
//   ../list_pages.js
import http from 'k6/http';
import { check } from 'k6';
import { options, pick } from '../list_pages.js';

export { options };

const plan = __ENV.PLAN ? JSON.parse(open(__ENV.PLAN))
  : [{ token: __ENV.TOKEN, approval: __ENV.APPROVAL }];

export default function () {
  const request = pick(plan);
  const response = http.get(`${__ENV.TARGET}/approvals/${request.approval}`,
    { headers: { Authorization: `Bearer ${request.token}` }, tags: { name: 'detail' } });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
