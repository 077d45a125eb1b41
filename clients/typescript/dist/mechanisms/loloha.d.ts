import { Frac } from "../device/fraction.js";
import { type PyJSON } from "../pyjson.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
type Params = {
    epsilon_perm: number;
    epsilon_1: number;
    d: number;
    g: number;
    relation?: string;
};
export declare class LOLOHA extends ClientMechanism {
    readonly name: string;
    readonly needsUserKey = true;
    readonly epsilonPerm: number;
    readonly g: number;
    readonly relation: "user" | "value";
    readonly T1: bigint;
    readonly T2: bigint;
    private readonly fp;
    private readonly inst;
    readonly epsInst: Frac;
    constructor(params: Params);
    protected specParams(): Record<string, PyJSON>;
    reportFields(): ReportField[];
    /** One collection of the user whose secret key is `key` (16 to 64 bytes). */
    randomizeKeyed(value: Label, key: Uint8Array, src?: RandomSource): Report;
    randomize(): Report;
    randomizeCode(): Report;
    /** The lifetime bound after t collections (`lifetime.bound`), exact. */
    lifetimeBound(t: number, relation?: "user" | "value"): Frac;
    /** What collection t (1-based) adds: bound(t) − bound(t − 1) under the spec's relation. */
    collectionCost(t: number): Frac;
}
export {};
