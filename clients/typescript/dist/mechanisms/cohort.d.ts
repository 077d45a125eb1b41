import type { PyJSON } from "../pyjson.js";
import { type RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
import { KRR } from "./krr.js";
type CohortParams = {
    epsilon: number;
    k: number;
    cohorts?: number;
    hash_seed?: number | bigint;
    d?: number | null;
    categories?: readonly Label[] | null;
    h?: number;
};
declare abstract class CohortMechanism extends ClientMechanism {
    readonly k: number;
    readonly cohorts: number;
    readonly hashSeed: bigint;
    readonly h: number;
    private readonly seeds;
    private readonly table;
    constructor(params: CohortParams, h?: number);
    protected specParams(): Record<string, PyJSON>;
    /** Closed alphabet: the item's code; open alphabet: its 64-bit key (strings and integers). */
    encodeItem(value: Label): bigint;
    randomize(value: Label, src?: RandomSource): Report;
    randomizeCode(code: number, src: RandomSource): Report;
    /** One report from an encoded item (a code, closed alphabet; a 64-bit key, open alphabet). */
    randomizeItem(item: bigint, s: RandomSource): Report;
    protected abstract randomizePositions(pos: number[], src: RandomSource): number | Uint8Array;
}
export declare class ORR extends CohortMechanism {
    readonly name: string;
    readonly krr: KRR;
    constructor(params: CohortParams);
    reportFields(): ReportField[];
    protected randomizePositions(pos: number[], src: RandomSource): number;
}
export declare class ORAPPOR extends CohortMechanism {
    readonly name: string;
    readonly pThreshold: bigint;
    private readonly own;
    private readonly row;
    constructor(params: CohortParams);
    protected specParams(): Record<string, PyJSON>;
    reportFields(): ReportField[];
    protected randomizePositions(pos: number[], src: RandomSource): Uint8Array;
}
export declare class CMS extends ORAPPOR {
    readonly name: string;
    constructor(params: CohortParams);
}
export declare class HCMS extends CohortMechanism {
    readonly name: string;
    private readonly rr;
    constructor(params: CohortParams);
    reportFields(): ReportField[];
    protected randomizePositions(pos: number[], src: RandomSource): number;
}
export {};
