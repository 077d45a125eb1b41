/**
 * Verification tooling (not part of the bundle): the exact output distribution of the real client
 * on one input, by replaying it once per leaf of the tree of its sampler calls' outcomes (depth
 * first), as the Python client's `verification/client_channel.py`. Each leaf lists the calls the
 * client made — kind, the threshold or range it passed, the outcome it got — so the verifier
 * weighs the leaf from the integers the client really used, not from what it documents.
 */
import type { ClientMechanism } from "../mechanisms/base.js";
import type { Report } from "../wire.js";
export declare class NotEnumerable extends Error {
}
export interface Leaf {
    calls: [string, string, number][];
    report: Report;
}
/** Every leaf of the client's outcome tree on input `code` (at most `maxLeaves`). */
export declare function enumerateClient(mech: ClientMechanism, code: number, maxLeaves?: number): Leaf[];
