// GET /approvals/:id for one request whose diff is of a 200-step workflow (loadtests/audit/run).
//
//   TARGET, TOKEN, APPROVAL; VUS, DURATION; RATE or none (saturation): see ../list_pages.js
import http from 'k6/http';
import { check } from 'k6';
import { options } from '../list_pages.js';

export { options };

export default function () {
  const response = http.get(`${__ENV.TARGET}/approvals/${__ENV.APPROVAL}`,
    { headers: { Authorization: `Bearer ${__ENV.TOKEN}` }, tags: { name: 'detail' } });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
