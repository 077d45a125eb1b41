// The exact-channel harness of `ldp verify --client typescript`.
// usage: node verify/channel.mjs JOB.json   (JOB: {spec, inputs: [codes], bug?: name, maxLeaves?})
// Prints {rows: [[leaf, …] per input]} with each leaf {calls: [[kind, param, outcome]…], wire: hex}
// (the wire of the report the client returned on that path), or {not_enumerable: reason}.
import { readFileSync } from "node:fs";
import { mechanismFromSpec } from "../dist/index.js";
import { plain, pyLoads } from "../dist/pyjson.js";
import { enumerateClient, NotEnumerable } from "../dist/testing/enumerate.js";
import { SEEDED_BUGS } from "../dist/testing/seeded_bugs.js";

const job = plain(pyLoads(readFileSync(process.argv[2], "utf8"))); // 64-bit integers (hash seeds) stay exact
const mech = job.bug ? SEEDED_BUGS[job.bug](job.spec) : mechanismFromSpec(job.spec);
try {
  const rows = job.inputs.map((x) =>
    enumerateClient(mech, x, job.maxLeaves ?? 50000).map((leaf) => ({
      calls: leaf.calls,
      wire: Buffer.from(mech.toWire(leaf.report)).toString("hex"),
    })),
  );
  process.stdout.write(JSON.stringify({ rows }));
} catch (e) {
  if (!(e instanceof NotEnumerable)) throw e;
  process.stdout.write(JSON.stringify({ not_enumerable: e.message }));
}
