// Starts workflow runs: POST /workflow-runs at a constant rate, each with a different subject.
//
//   TARGET     base URL (default http://127.0.0.1:8080)
//   TOKEN      an admin token of the benchmark tenant
//   KEY        the workflow's definition key
//   RATE       runs started per second; DURATION (default 30s); VUS (default 200)
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

// Runs the API took: 202, or 504 `command_timeout` (the command is on the log and is applied
// once the pipeline is back).
const accepted = new Counter('accepted');

const target = __ENV.TARGET || 'http://127.0.0.1:8080';
const rate = Number(__ENV.RATE || 50);
const vus = Number(__ENV.VUS || 200);
const countries = ['GB', 'FR', 'DE', 'ES', 'IT', 'NL', 'PL', 'SE'];

export const options = {
  scenarios: {
    start: {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: vus,
      maxVUs: vus,
    },
  },
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
};

export default function () {
  const body = JSON.stringify({
    definitionKey: __ENV.KEY,
    subjectId: crypto.randomUUID(),
    context: {
      subject: {
        name: `Person ${__VU}-${__ITER}`,
        country: countries[__ITER % countries.length],
      },
    },
  });
  const response = http.post(`${target}/workflow-runs`, body, {
    headers: { Authorization: `Bearer ${__ENV.TOKEN}`, 'Content-Type': 'application/json' },
    timeout: '60s',
    responseType: 'text',
  });
  if (response.status === 202 || (response.status === 504 && response.body.includes('command_timeout'))) {
    accepted.add(1);
  }
  check(response, { 'status is 202': (r) => r.status === 202 });
}
