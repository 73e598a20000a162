// The ceiling of a one-call run: the runner's POST /v1/invoke of the same module, action and
// vendor, at saturation with VUS connections.
//
//   RUNNER_URL, APP_RUNNER_TOKEN, BODY (the invoke request, JSON), VUS, DURATION
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  scenarios: {
    invoke: { executor: 'constant-vus', vus: Number(__ENV.VUS || 8), duration: __ENV.DURATION || '20s' },
  },
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
};

export default function () {
  const response = http.post(`${__ENV.RUNNER_URL}/v1/invoke`, __ENV.BODY, {
    headers: { Authorization: `Bearer ${__ENV.APP_RUNNER_TOKEN}`, 'Content-Type': 'application/json' },
  });
  check(response, { 'status is 200': (r) => r.status === 200 });
}
