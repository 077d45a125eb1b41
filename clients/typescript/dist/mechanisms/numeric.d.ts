/**
 * One number per user on a declared range [lower, upper], on exact grids, as the Python client's
 * `Duchi`, `Piecewise`, `Hybrid` (numeric means) and `SquareWave` (distributions; Li et al.,
 * SIGMOD 2020). The mean mechanisms map the number to t in [−1, 1], round it to one of grid + 1
 * points by randomized rounding (one uniform 64-bit word against an integer threshold), then draw
 * the report: Duchi one word against T(k) = t_low + k·step; Piecewise a Bernoulli for the window and
 * an exactly uniform cell inside or outside it (Wang et al., ICDE 2019). Square Wave takes the
 * number's cell among grid cells and draws its window the same way. Realized ratios are checked
 * <= e**ε exactly. Report: one u32.
 */
import { Bernoulli } from "../bernoulli.js";
import { type Rational } from "../exact.js";
import { type PyJSON } from "../pyjson.js";
import { type RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
type NumParams = {
    epsilon: number;
    lower?: number;
    upper?: number;
    grid?: number;
};
declare abstract class NumberMechanism extends ClientMechanism {
    readonly lower: number;
    readonly upper: number;
    readonly grid: number;
    constructor(params: NumParams, defaultGrid: number, maxGrid: number);
    protected specParams(): Record<string, PyJSON>;
    protected checkValue(value: Label): number;
    randomize(value: Label, src?: RandomSource): Report;
    randomizeCode(code: number, src: RandomSource): Report;
    protected abstract sampleNumber(x: number, src: RandomSource): number;
    /** The report of an already rounded grid index / cell. */
    protected abstract sampleCell(k: number, src: RandomSource): number;
}
/** Bernoulli for the window, then a uniform cell inside [k, k + w) or outside it (`_window_sample`). */
declare class Window {
    readonly threshold: bigint;
    readonly width: number;
    readonly cells: number;
    readonly inside: Bernoulli;
    constructor(threshold: bigint, width: number, cells: number);
    sample(k: number, src: RandomSource): number;
    /** The window of `width` among `cells` whose probability is floor(2**64 · wE/(wE + cells − w))
     * (E a certain lower bound of e**ε), so that p_hi/p_lo <= e**ε; checked exactly. */
    static forEpsilon(epsilon: number, width: number, cells: number): Window;
    /** p_hi/p_lo = T(cells − w) / ((2**64 − T) w) <= L. */
    check(L: Rational): void;
}
export declare class Duchi extends NumberMechanism {
    readonly name: string;
    readonly tLow: bigint;
    readonly step: bigint;
    constructor(params: NumParams);
    reportFields(): ReportField[];
    protected sampleNumber(x: number, src: RandomSource): number;
    protected sampleCell(k: number, src: RandomSource): number;
}
export declare class Piecewise extends NumberMechanism {
    readonly name: string;
    readonly window: Window;
    constructor(params: NumParams);
    reportFields(): ReportField[];
    protected sampleNumber(x: number, src: RandomSource): number;
    protected sampleCell(k: number, src: RandomSource): number;
}
export declare class Hybrid extends NumberMechanism {
    readonly name: string;
    readonly duchi: Duchi;
    readonly piecewise: Piecewise;
    readonly componentThreshold: bigint;
    private readonly component;
    constructor(params: NumParams);
    reportFields(): ReportField[];
    protected sampleNumber(x: number, src: RandomSource): number;
    protected sampleCell(k: number, src: RandomSource): number;
}
/** Square Wave's half-width b on the unit interval (Li et al., SIGMOD 2020, eq. 5). */
export declare function squareWaveB(epsilon: number): number;
export declare class SquareWave extends NumberMechanism {
    readonly name: string;
    readonly window: Window;
    constructor(params: NumParams);
    reportFields(): ReportField[];
    protected sampleNumber(x: number, src: RandomSource): number;
    protected sampleCell(k: number, src: RandomSource): number;
}
export {};
