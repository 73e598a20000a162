// Authenticated reads against the API (or the ceiling server, same script).
//
//   TARGET   base URL                       (default http://127.0.0.1:8080)
//   ROUTE    path and query to GET          (default /app-invocations?limit=10)
//   TOKENS   comma-separated bearer tokens; each VU uses one (several callers, so the
//            per-caller rate limit is exercised the way real traffic does)
//   VUS, DURATION                           (default 64, 20s)
//   RATE     requests per second to offer with VUS connections (constant arrival rate);
//            unset: each VU sends its next request as soon as the last one answered
//            (saturation throughput)
import http from 'k6/http';
import { check } from 'k6';

const target = __ENV.TARGET || 'http://127.0.0.1:8080';
const route = __ENV.ROUTE || '/app-invocations?limit=10';
const tokens = (__ENV.TOKENS || '').split(',').filter((t) => t.length > 0);

const vus = Number(__ENV.VUS || 64);
const duration = __ENV.DURATION || '20s';
const rate = Number(__ENV.RATE || 0);

export const options = {
  scenarios: {
    read: rate > 0
      ? {
          executor: 'constant-arrival-rate',
          rate,
          timeUnit: '1s',
          duration,
          preAllocatedVUs: vus,
          maxVUs: vus,
        }
      : { executor: 'constant-vus', vus, duration },
  },
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
  thresholds: { checks: ['rate>0.999'] },
};

export default function () {
  const headers = {};
  if (tokens.length > 0) {
    headers.Authorization = `Bearer ${tokens[(__VU - 1) % tokens.length]}`;
  }
  const response = http.get(`${target}${route}`, { headers });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
