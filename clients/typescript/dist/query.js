/**
 * A federated query as the Python server sends it (ldp_plugin/federated/query.py): versioned
 * JSON with the mechanism's spec and ε as exact decimal text; its content hash (16 bytes of SHA-256
 * over the canonical JSON) is the tag every report of the query carries.
 */
import { PyFloat, plain, pyDumps, pyLoads } from "./pyjson.js";
import { sha256 } from "./sha256.js";
import { Frac } from "./device/fraction.js";
export const QUERY_VERSION = 1;
const FIELDS = new Set(["version", "query_id", "spec", "epsilon", "cohort_policy", "period", "min_batch", "discovery"]);
export class QueryError extends Error {
    constructor(reason) {
        super(reason);
        this.reason = reason;
    }
}
export function parseQuery(text) {
    let doc;
    try {
        doc = pyLoads(text);
    }
    catch {
        throw new QueryError("malformed_query");
    }
    if (doc === null || typeof doc !== "object" || Array.isArray(doc) || doc instanceof PyFloat)
        throw new QueryError("unsupported_version");
    const d = doc;
    if (d.version !== QUERY_VERSION)
        throw new QueryError("unsupported_version");
    if (Object.keys(d).some((k) => !FIELDS.has(k)))
        throw new QueryError("malformed_query");
    const spec = d.spec;
    if (spec === null || typeof spec !== "object" || Array.isArray(spec) || spec instanceof PyFloat)
        throw new QueryError("malformed_query");
    if (typeof d.epsilon !== "string" || typeof d.query_id !== "string" || !d.query_id || d.query_id.length > 200)
        throw new QueryError("malformed_query");
    if (d.discovery != null)
        throw new QueryError("malformed_query"); // heavy-hitter discovery: not in this client
    let eps;
    try {
        eps = Frac.parse(d.epsilon, "epsilon");
    }
    catch {
        throw new QueryError("malformed_query");
    }
    if (eps.num <= 0n)
        throw new QueryError("malformed_query");
    const canonical = {
        version: d.version, query_id: d.query_id, spec, epsilon: d.epsilon,
        cohort_policy: d.cohort_policy ?? "none", period: d.period ?? null, min_batch: d.min_batch ?? 1,
    };
    const json = pyDumps(canonical);
    const s = plain(spec);
    const core = s.mechanism !== undefined && s.name === undefined ? s.mechanism : s; // a set wrapper names its mechanism
    if (core === null || typeof core !== "object" || typeof core.name !== "string" || core.params === null || typeof core.params !== "object") {
        throw new QueryError("malformed_query");
    }
    return {
        queryId: d.query_id, spec: { ...s, name: core.name, params: core.params }, epsilon: eps, epsilonText: d.epsilon,
        contentHash: sha256(new TextEncoder().encode(json)).subarray(0, 16), json,
    };
}
