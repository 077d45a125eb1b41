/**
 * What a device enforces, set by its owner only, never by a server message (the Python device's
 * `DevicePolicy`): the mechanisms it allows, a maximum ε per query, and the lifetime and optional
 * per-period caps of its budget. Refusal reasons are the Python device's codes.
 */
import { Frac } from "./fraction.js";
export declare const PERIODS: readonly ["day", "hour", "week"];
export type Period = (typeof PERIODS)[number];
export interface PolicyInit {
    lifetimeCap: string;
    maxEpsilonPerQuery: string;
    allowedMechanisms?: string[] | null;
    periodCap?: string | null;
    period?: Period | null;
    /** the relations a memoized series may be charged under ("user" by default; "value" only if listed) */
    allowedRelations?: ("user" | "value")[];
}
export declare class DevicePolicy {
    readonly lifetimeCap: Frac;
    readonly maxEpsilonPerQuery: Frac;
    readonly allowedMechanisms: string[] | null;
    readonly periodCap: Frac | null;
    readonly period: Period | null;
    readonly allowedRelations: string[];
    constructor(init: PolicyInit);
    /** The reason this policy refuses a query, or null (checked before the ledger and the value). */
    refusal(mechanism: string, epsilon: Frac, relation: unknown): string | null;
    /** The caps as stored in the ledger (exact text). */
    caps(): {
        lifetime_cap: string;
        period_cap: string | null;
        period: Period | null;
    };
    /** The UTC period key of `when` (the Python accountant's `period_key`). */
    periodKey(when: Date): string | null;
}
