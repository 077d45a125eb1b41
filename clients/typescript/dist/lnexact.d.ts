/**
 * The Python client's `epsilon_of_ratio` (ldp_plugin/exact.py): the realized ε of a worst-case
 * likelihood ratio r >= 1 as a double that is never below ln r — ln of r (rounded up to 60 digits)
 * correctly rounded to 60 significant digits, one unit up, the smallest double at or above that,
 * then stepped up while r > the certain lower bound of e**ε.
 */
import { type Rational } from "./exact.js";
/** The double nearest to num/den (ties to even), num, den > 0. */
export declare function ratToDouble(num: bigint, den: bigint): number;
export declare function epsilonOfRatio(ratio: Rational): number;
