// Replays the Python client's recorded random streams through the TypeScript client.
// usage: node vectors/replay.mjs VECTORS.json [--check]
// Prints one JSON line per vector ({wire, consumed}); with --check, compares with the vector's
// wire and exits 1 on the first difference (what `npm test` runs).
import { readFileSync } from "node:fs";
import { mechanismFromSpec, ReplaySource, pyLoads } from "../dist/index.js";
import { plain } from "../dist/pyjson.js";

const [path, flag] = process.argv.slice(2);
const vectors = plain(pyLoads(readFileSync(path, "utf8"))); // 64-bit integers (hash seeds) stay exact
const hex = (s) => Uint8Array.from(Buffer.from(s, "hex"));
let bad = 0;
const out = [];
for (const [i, v] of vectors.entries()) {
  const mech = mechanismFromSpec(v.spec);
  const src = new ReplaySource(hex(v.random));
  let wire = "";
  try {
    const report = v.key ? mech.randomizeKeyed(v.value, hex(v.key), src) : mech.randomize(v.value, src); // key: memoized mechanisms
    wire = Buffer.from(mech.toWire(report, hex(v.tag))).toString("hex");
  } catch (e) {
    wire = `error: ${e.message}`;
  }
  out.push({ wire, consumed: src.consumed });
  if (flag === "--check" && (wire !== v.wire || src.consumed * 2 !== v.random.length)) {
    bad++;
    if (bad <= 5) console.error(`vector ${i} (${v.spec.name ?? v.spec.set}): got ${wire} consumed ${src.consumed}, want ${v.wire} consumed ${v.random.length / 2}`);
  }
}
if (flag === "--check") {
  console.log(`${vectors.length - bad}/${vectors.length} vectors byte-identical`);
  process.exit(bad ? 1 : 0);
} else {
  process.stdout.write(JSON.stringify(out));
}
