import type { PyJSON } from "../pyjson.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
export declare class KSubset extends ClientMechanism {
    readonly name: string;
    readonly k: number;
    readonly includeThreshold: bigint;
    private readonly include;
    private readonly c;
    private readonly groups;
    private readonly P;
    private readonly thr;
    constructor(params: {
        epsilon: number;
        d?: number | null;
        categories?: readonly Label[] | null;
        k: number;
    });
    /** Verification only (an enumerating source): the other items as one uniform choice among the
     * C(d − 1, s) subsets of the d − 1 others (what Floyd's algorithm realizes exactly), unranked in
     * lexicographic order. */
    private enumerated;
    protected specParams(): Record<string, PyJSON>;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
