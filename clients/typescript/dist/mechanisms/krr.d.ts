/**
 * k-ary randomized response (Kairouz, Bonawitz & Ramage, ICML 2016, eq. 6) and Warner's RR (d = 2
 * on booleans, eq. 3), as the Python client's `KRR`/`WarnerRR`: keep the true item iff one Bernoulli
 * of threshold T = floor(2**64 · L/(L + d − 1)) fires (L a certain lower bound of e**ε), else an
 * exactly uniform other item. Realized ratio T(d − 1)/(2**64 − T) <= L <= e**ε, checked here.
 */
import { Bernoulli } from "../bernoulli.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
import type { PyJSON } from "../pyjson.js";
export declare class KRR extends ClientMechanism {
    readonly name: string;
    readonly keepThreshold: bigint;
    readonly keep: Bernoulli;
    constructor(params: {
        epsilon: number;
        d?: number | null;
        categories?: readonly Label[] | null;
    });
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
export declare class WarnerRR extends KRR {
    readonly name: string;
    constructor(params: {
        epsilon: number;
    });
    protected specParams(): Record<string, PyJSON>;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
