/**
 * Hadamard response and the Hadamard mechanism, as the Python client's `HadamardResponse` and
 * `HadamardMechanism` (K the smallest power of two > d, row x + 1 of the Sylvester matrix, the one
 * Bernoulli of threshold T = floor(2**64 · L/(L + 1)) and one exactly uniform draw in [0, K);
 * realized ratio T/(2**64 − T) <= L <= e**ε, checked here).
 */
import { Bernoulli } from "../bernoulli.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
type Params = {
    epsilon: number;
    d?: number | null;
    categories?: readonly Label[] | null;
};
declare abstract class HadamardBase extends ClientMechanism {
    readonly K: number;
    readonly threshold: bigint;
    protected readonly coin: Bernoulli;
    constructor(params: Params);
}
export declare class HadamardResponse extends HadamardBase {
    readonly name: string;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
export declare class HadamardMechanism extends HadamardBase {
    readonly name: string;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
export {};
