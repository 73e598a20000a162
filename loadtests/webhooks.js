// A burst of vendor webhooks on the platform route (docs/vendor-webhooks.md) at a fixed offered
// rate, against sessions opened beforehand by loadtests/webhooks/run. Of every ten deliveries,
// seven are new events completing a pending session, two repeat an event sent a moment before
// (duplicates), and one is a new event for a session that settled long ago (stale).
//
//   TARGET    base URL                          (default http://127.0.0.1:8080)
//   PREFIX    the external-id prefix of this run's sessions
//   SETTLED   how many settled sessions there are
//   RATE      webhooks offered per second       (default 500)
//   DURATION  (default 60s)
//
// Counters received / duplicate / stale / refused (any other answer) let the run script
// reconcile what was answered with what was recorded, and each `received` or `stale` answer is
// written to the console output (`received <eventId>`, `stale <eventId>`) so it can check that
// every answer matches what recording the event came to.
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const target = __ENV.TARGET || 'http://127.0.0.1:8080';
const prefix = __ENV.PREFIX || 'bench';
const settled = Number(__ENV.SETTLED || 1000);
const rate = Number(__ENV.RATE || 500);
const duration = __ENV.DURATION || '60s';

const received = new Counter('webhooks_received');
const duplicate = new Counter('webhooks_duplicate');
const stale = new Counter('webhooks_stale');
const refused = new Counter('webhooks_refused');

export const options = {
  scenarios: {
    webhooks: {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration,
      preAllocatedVUs: Math.max(50, Math.ceil(rate / 10)),
      maxVUs: Math.max(300, rate),
    },
  },
  summaryTrendStats: ['med', 'p(90)', 'p(99)', 'max'],
};

// The delivery of iteration i: which session, which event.
function delivery(i) {
  const block = Math.floor(i / 10);
  const slot = i % 10;
  if (slot < 7) {
    const n = block * 7 + slot;
    return { sessionId: `${prefix}-${n}`, eventId: `${prefix}-e-${n}` };
  }
  if (slot < 9) {
    // A repeat of a fresh event sent one to six blocks (10 to 60 deliveries) earlier.
    const n = Math.max(0, (block - 1 - (i % 6)) * 7 + (i % 7));
    return { sessionId: `${prefix}-${n}`, eventId: `${prefix}-e-${n}` };
  }
  const j = block % settled;
  return { sessionId: `${prefix}-settled-${j}`, eventId: `${prefix}-late-${i}` };
}

export default function () {
  const { sessionId, eventId } = delivery(exec.scenario.iterationInTest);
  const body = JSON.stringify({ sessionId, eventId, result: 'approved' });
  const response = http.post(`${target}/webhooks/apps/vendor-app`, body, {
    headers: { 'content-type': 'application/json' },
  });
  let answer = {};
  try {
    answer = response.json();
  } catch (_) {
    answer = {};
  }
  if (response.status === 202 && answer.received === true) {
    received.add(1);
    console.log(`received ${eventId}`);
  } else if (response.status === 200 && answer.duplicate === true) {
    duplicate.add(1);
  } else if (response.status === 200 && answer.stale === true) {
    stale.add(1);
    console.log(`stale ${eventId}`);
  } else {
    refused.add(1);
  }
  check(response, { 'answered 200 or 202': (r) => r.status === 200 || r.status === 202 });
}
