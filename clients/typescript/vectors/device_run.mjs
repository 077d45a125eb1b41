// Runs the TypeScript device (file ledger) over a sequence of queries.
// usage: node vectors/device_run.mjs JOB.json  (JOB: {ledger: path, policy: PolicyInit, value, queries: [json text], now?: ISO})
// Prints [{refused, retry, envelope (hex or null)}] and the remaining budget.
import { readFileSync } from "node:fs";
import { Device, FileStore } from "../dist/index.js";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const now = job.now ? () => new Date(job.now) : undefined;
let device;
try {
  device = await Device.open(new FileStore(job.ledger), job.policy, { now });
} catch (e) {
  process.stdout.write(JSON.stringify({ open_refused: e.reason ?? "error" }));
  process.exit(0);
}
const answers = [];
for (const q of job.queries) {
  const a = await device.respond(q, job.value);
  answers.push({ refused: a.refused, retry: a.retry, envelope: a.envelope ? Buffer.from(a.envelope).toString("hex") : null });
}
process.stdout.write(JSON.stringify({ answers, remaining: await device.remaining() }));
