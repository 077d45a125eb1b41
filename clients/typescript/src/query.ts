/**
 * A federated query as the Python server sends it (ldp_plugin/federated/query.py): versioned
 * JSON with the mechanism's spec and ε as exact decimal text; its content hash (16 bytes of SHA-256
 * over the canonical JSON) is the tag every report of the query carries.
 */
import { PyFloat, plain, pyDumps, pyLoads, type PyJSON } from "./pyjson.js";
import { sha256 } from "./sha256.js";
import { Frac } from "./device/fraction.js";

export const QUERY_VERSION = 1;
const FIELDS = new Set(["version", "query_id", "spec", "epsilon", "cohort_policy", "period", "min_batch", "discovery"]);

export class QueryError extends Error {
  constructor(readonly reason: "unsupported_version" | "malformed_query") {
    super(reason);
  }
}

export interface Query {
  queryId: string;
  /** the spec as JSON values; `name` is the mechanism's name (a set wrapper's inner mechanism) */
  spec: { name: string; params: Record<string, unknown>; [k: string]: unknown };
  epsilon: Frac;
  epsilonText: string;
  contentHash: Uint8Array;
  json: string;
}

export function parseQuery(text: string): Query {
  let doc: PyJSON;
  try {
    doc = pyLoads(text);
  } catch {
    throw new QueryError("malformed_query");
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc) || doc instanceof PyFloat) throw new QueryError("unsupported_version");
  const d = doc as { [k: string]: PyJSON };
  if (d.version !== QUERY_VERSION) throw new QueryError("unsupported_version");
  if (Object.keys(d).some((k) => !FIELDS.has(k))) throw new QueryError("malformed_query");
  const spec = d.spec;
  if (spec === null || typeof spec !== "object" || Array.isArray(spec) || spec instanceof PyFloat) throw new QueryError("malformed_query");
  if (typeof d.epsilon !== "string" || typeof d.query_id !== "string" || !d.query_id || d.query_id.length > 200) throw new QueryError("malformed_query");
  if (d.discovery != null) throw new QueryError("malformed_query"); // heavy-hitter discovery: not in this client
  let eps: Frac;
  try {
    eps = Frac.parse(d.epsilon, "epsilon");
  } catch {
    throw new QueryError("malformed_query");
  }
  if (eps.num <= 0n) throw new QueryError("malformed_query");
  const canonical: { [k: string]: PyJSON } = {
    version: d.version, query_id: d.query_id, spec, epsilon: d.epsilon,
    cohort_policy: d.cohort_policy ?? "none", period: d.period ?? null, min_batch: d.min_batch ?? 1,
  };
  const json = pyDumps(canonical);
  const s = plain(spec) as { name?: unknown; params?: unknown; mechanism?: { name?: unknown; params?: unknown } };
  const core = s.mechanism !== undefined && s.name === undefined ? s.mechanism : s; // a set wrapper names its mechanism
  if (core === null || typeof core !== "object" || typeof core.name !== "string" || core.params === null || typeof core.params !== "object") {
    throw new QueryError("malformed_query");
  }
  return {
    queryId: d.query_id, spec: { ...(s as Record<string, unknown>), name: core.name, params: core.params as Record<string, unknown> }, epsilon: eps, epsilonText: d.epsilon,
    contentHash: sha256(new TextEncoder().encode(json)).subarray(0, 16), json,
  };
}
