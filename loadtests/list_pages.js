// What the list benchmarks share (history/reads.js, callbacks/reads.js): the scenario a run
// asks for, and a random pick.
//
//   VUS, DURATION; RATE (constant arrival rate) or none (saturation)

const vus = Number(__ENV.VUS || 32);
const rate = Number(__ENV.RATE || 0);

// k6 options: a constant arrival rate when RATE is set, else VUS requesting as fast as answered.
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

export const pick = (items) => items[Math.floor(Math.random() * items.length)];
