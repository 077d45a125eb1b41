// Reports made by the TypeScript client, for the Python collector.
// usage: node vectors/make_reports.mjs JOB.json  (JOB: {spec, values, tag (hex), random (a file of hex, optional), bug (optional), codes (optional)})
// Prints one sealed envelope per value, hex, one per line. Without `random` the randomness is the
// platform CSPRNG; with it, the recorded stream is replayed (reproducible tests only).
import { readFileSync } from "node:fs";
import { mechanismFromSpec, ReplaySource, secureSource, seal } from "../dist/index.js";
import { plain, pyLoads } from "../dist/pyjson.js";
import { SEEDED_BUGS } from "../dist/testing/seeded_bugs.js";

const job = plain(pyLoads(readFileSync(process.argv[2], "utf8"))); // 64-bit integers (hash seeds) stay exact
const hex = (s) => Uint8Array.from(Buffer.from(s, "hex"));
const mech = job.bug ? SEEDED_BUGS[job.bug](job.spec) : mechanismFromSpec(job.spec); // bug: verification only
const src = job.random ? new ReplaySource(hex(readFileSync(job.random, "utf8").trim())) : secureSource();
const tag = hex(job.tag);
const lines = [];
// codes: the values are input codes / grid indices (verification inputs), randomized by randomizeCode
const one = job.codes ? (v) => mech.randomizeCode(v, src) : (v) => mech.randomize(v, src);
for (const v of job.values) lines.push(Buffer.from(seal(mech.toWire(one(v), tag))).toString("hex"));
process.stdout.write(lines.join("\n") + "\n");
