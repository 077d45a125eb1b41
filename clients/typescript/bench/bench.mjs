// Reports per second of the TypeScript client under Node (CSPRNG source, one user at a time).
// usage: node bench/bench.mjs  → one JSON object per case
import { KRR, OUE, OLH, HadamardResponse, KSubset, RAPPOR, ORR, HCMS, Piecewise, SquareWave, secureSource } from "../dist/index.js";

const cases = [
  ["krr d=16 eps=1", new KRR({ epsilon: 1, d: 16 }), 3_000_000],
  ["krr d=1024 eps=4", new KRR({ epsilon: 4, d: 1024 }), 3_000_000],
  ["oue d=64 eps=1", new OUE({ epsilon: 1, d: 64 }), 600_000],
  ["oue d=64 eps=4 (sparse)", new OUE({ epsilon: 4, d: 64 }), 600_000],
  ["rappor d=64 eps=2", new RAPPOR({ epsilon: 2, d: 64 }), 600_000],
  ["olh d=1024 eps=2", new OLH({ epsilon: 2, d: 1024 }), 300_000],
  ["hadamard d=1024 eps=2", new HadamardResponse({ epsilon: 2, d: 1024 }), 2_000_000],
  ["k-subset d=64 k=8 eps=1", new KSubset({ epsilon: 1, d: 64, k: 8 }), 300_000],
  ["orr k=32 C=64 d=64 eps=2 (closed)", new ORR({ epsilon: 2, k: 32, cohorts: 64, d: 64 }), 1_000_000],
  ["hcms k=1024 C=16 d=64 eps=2 (closed)", new HCMS({ epsilon: 2, k: 1024, cohorts: 16, d: 64 }), 1_000_000],
  ["piecewise grid=1024 eps=1 (grid index)", new Piecewise({ epsilon: 1 }), 1_000_000],
  ["square-wave grid=256 eps=1 (cell)", new SquareWave({ epsilon: 1 }), 1_000_000],
];
const src = secureSource();
for (const [name, mech, n] of cases) {
  const d = mech.d > 0 ? mech.d : mech.grid; // closed domain, or the grid of a numeric mechanism
  for (let i = 0; i < Math.min(n, 20000); i++) mech.randomizeCode(i % d, src); // warm-up
  const reps = [];
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    let sink = 0;
    for (let i = 0; i < n; i++) sink ^= Number(mech.randomizeCode(i % d, src).report !== undefined);
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    reps.push(n / secs);
    if (sink < 0) console.log(sink);
  }
  reps.sort((a, b) => a - b);
  console.log(JSON.stringify({ case: name, reports: n, per_second_median: Math.round(reps[1]), per_second_min: Math.round(reps[0]) }));
}
