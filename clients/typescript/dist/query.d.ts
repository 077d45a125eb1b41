import { Frac } from "./device/fraction.js";
export declare const QUERY_VERSION = 1;
export declare class QueryError extends Error {
    readonly reason: "unsupported_version" | "malformed_query";
    constructor(reason: "unsupported_version" | "malformed_query");
}
export interface Query {
    queryId: string;
    /** the spec as JSON values; `name` is the mechanism's name (a set wrapper's inner mechanism) */
    spec: {
        name: string;
        params: Record<string, unknown>;
        [k: string]: unknown;
    };
    epsilon: Frac;
    epsilonText: string;
    contentHash: Uint8Array;
    json: string;
}
export declare function parseQuery(text: string): Query;
