/** Exact non-negative rationals from decimal text ("2", "0.5", "1e-3", "1/3"), as the Python
 * device's `Fraction(str(value))`: budgets are compared and added exactly, never in floats. */
export declare class Frac {
    readonly num: bigint;
    readonly den: bigint;
    constructor(num: bigint, den: bigint);
    static parse(text: string, name?: string): Frac;
    add(o: Frac): Frac;
    sub(o: Frac): Frac;
    cmp(o: Frac): number;
    toString(): string;
}
