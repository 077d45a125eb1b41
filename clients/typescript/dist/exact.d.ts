/**
 * Exact arithmetic for privacy constants, the same numbers as the Python client's
 * `ldp_plugin/exact.py`: a certain rational lower bound of e**x (e**x correctly rounded to 60
 * significant digits, then one unit in the last place down) and integer thresholds over 2**64.
 * Everything is BigInt: no float enters a decision.
 */
export declare const TWO64: bigint;
/** A non-negative rational num/den (den > 0), not necessarily reduced. */
export interface Rational {
    num: bigint;
    den: bigint;
}
/** The exact value of a finite double as mantissa / 2**shift (shift >= 0) or mantissa * 2**-shift. */
export declare function floatToRational(x: number): Rational;
/**
 * The Python client's `exp_lower_bound(x)`: Decimal's exp of the double `x`, correctly rounded
 * (half even) to 60 significant digits, then `next_minus` (one unit in the 60th digit down).
 * A rational certainly <= e**x.
 */
export declare function expLowerBound(x: number): Rational;
/** floor(p · 2**64) for a rational p (an event of probability T/2**64 <= p). */
export declare function floorThreshold(p: Rational): bigint;
/** ceil(p · 2**64) for a rational p >= 0. */
export declare function ceilThreshold(p: Rational): bigint;
/** a <= b for rationals. */
export declare function leq(a: Rational, b: Rational): boolean;
