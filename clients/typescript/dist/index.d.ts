/**
 * ldp-plugin-client: the device side of ldp-plugin in TypeScript, no runtime dependencies.
 * Every decision compares uniform random bytes with the Python client's exact integer thresholds
 * (BigInt), so a report made here from the same bytes is byte-identical to the Python client's,
 * and the Python collector decodes it with `from_wire_many`.
 */
export { TWO64, expLowerBound, floorThreshold, ceilThreshold, type Rational } from "./exact.js";
export { sha256 } from "./sha256.js";
export { pyDumps, PyFloat, type PyJSON } from "./pyjson.js";
export { SecureSource, ReplaySource, secureSource, type RandomSource } from "./source.js";
export { Bernoulli, PackedRow, uniformInt, bernoulliRow } from "./bernoulli.js";
export { toWire, wireFingerprint, reportSize, type Report, type ReportField } from "./wire.js";
export { ClientMechanism, type Label } from "./mechanisms/base.js";
export { KRR, WarnerRR } from "./mechanisms/krr.js";
export { RAPPOR, OUE, UnaryEncoding } from "./mechanisms/unary.js";
export { seal, NONCE_BYTES } from "./envelope.js";
export { mechanismFromSpec, CLIENT_MECHANISMS } from "./spec.js";
export { OLH, olhDefaultG } from "./mechanisms/olh.js";
export { HadamardResponse, HadamardMechanism } from "./mechanisms/hadamard.js";
export { KSubset } from "./mechanisms/subset.js";
export { mix64, intItemKey, seededHash } from "./hashing.js";
export { pyLoads } from "./pyjson.js";
export { parseQuery, QUERY_VERSION, type Query } from "./query.js";
export { Frac } from "./device/fraction.js";
export { DevicePolicy, type PolicyInit } from "./device/policy.js";
export { MemoryStore, IndexedDBStore, FileStore, type LedgerStore } from "./device/store.js";
export { Device, DeviceRefusal, type Answer } from "./device/device.js";
export { ORR, ORAPPOR, CMS, HCMS } from "./mechanisms/cohort.js";
export { itemKey, cohortSeeds, seededPermutation } from "./hashing.js";
export { blake2b } from "./blake2b.js";
export { Duchi, Piecewise, Hybrid, SquareWave, squareWaveB } from "./mechanisms/numeric.js";
export { SampleOne, PAD } from "./mechanisms/sample_one.js";
export { LOLOHA } from "./mechanisms/loloha.js";
export { shake256 } from "./shake256.js";
export { epsilonOfRatio } from "./lnexact.js";
