import { type Rational } from "../exact.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
type Params = {
    epsilon: number;
    d?: number | null;
    categories?: readonly Label[] | null;
};
export declare abstract class UnaryEncoding extends ClientMechanism {
    readonly pThreshold: bigint;
    readonly qThreshold: bigint;
    private readonly own;
    private readonly row;
    constructor(params: Params);
    /** [p threshold, q threshold, L (a certain lower bound of e**ε)]. */
    protected abstract thresholds(): [bigint, bigint, Rational];
    get nBytes(): number;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
export declare class RAPPOR extends UnaryEncoding {
    readonly name: string;
    protected thresholds(): [bigint, bigint, Rational];
}
export declare class OUE extends UnaryEncoding {
    readonly name: string;
    protected thresholds(): [bigint, bigint, Rational];
}
export {};
