/**
 * The Python client's `epsilon_of_ratio` (ldp_plugin/exact.py): the realized ε of a worst-case
 * likelihood ratio r >= 1 as a double that is never below ln r — ln of r (rounded up to 60 digits)
 * correctly rounded to 60 significant digits, one unit up, the smallest double at or above that,
 * then stepped up while r > the certain lower bound of e**ε.
 */
import { expLowerBound, floatToRational } from "./exact.js";
const W = 700; // fixed-point bits
function atanhSeries(num, den) {
    // atanh(num/den) · 2**W for 0 <= num/den < 1/2
    const one = 1n << BigInt(W);
    const x = (num * one) / den;
    const x2 = (x * x) >> BigInt(W);
    let term = x;
    let sum = 0n;
    for (let k = 1n; term !== 0n; k += 2n) {
        sum += term / k;
        term = (term * x2) >> BigInt(W);
    }
    return sum;
}
const LN2 = 2n * atanhSeries(1n, 3n);
/** ln(num/den) · 2**W (num/den >= 1). */
function lnFixed(num, den) {
    let n = 0;
    while (num >= 2n * den) {
        den *= 2n;
        n++;
    }
    // m = num/den in [1, 2): ln m = 2 atanh((m − 1)/(m + 1))
    return BigInt(n) * LN2 + 2n * atanhSeries(num - den, num + den);
}
const POW10 = [1n];
const pow10 = (k) => {
    while (POW10.length <= k)
        POW10.push(POW10[POW10.length - 1] * 10n);
    return POW10[k];
};
/** The double nearest to num/den (ties to even), num, den > 0. */
export function ratToDouble(num, den) {
    let s = 53 - (num.toString(2).length - den.toString(2).length);
    const calc = (sh) => {
        const n = sh >= 0 ? num << BigInt(sh) : num, d = sh >= 0 ? den : den << BigInt(-sh);
        return [n / d, n % d];
    };
    let [q, r] = calc(s);
    while (q >= 1n << 54n)
        [q, r] = calc(--s);
    while (q < 1n << 53n)
        [q, r] = calc(++s);
    // q has 54 bits: drop the last one, rounding half to even (the remainder is the sticky part)
    const half = q & 1n;
    q >>= 1n;
    if (half && (r > 0n || (q & 1n)))
        q += 1n;
    return Number(q) * 2 ** (1 - s);
}
function nextUp(x) {
    const v = new DataView(new ArrayBuffer(8));
    v.setFloat64(0, x);
    v.setBigUint64(0, v.getBigUint64(0) + 1n);
    return v.getFloat64(0);
}
/** The smallest double >= num/den. */
function doubleUp(num, den) {
    const d = ratToDouble(num, den);
    const r = floatToRational(d);
    return r.num * den < num * r.den ? nextUp(d) : d;
}
export function epsilonOfRatio(ratio) {
    const { num, den } = ratio;
    if (num < den)
        throw new RangeError("a worst-case likelihood ratio is at least 1");
    if (num === den)
        return 0;
    // num/den to 60 digits, rounded up (the Python context's ROUND_CEILING divide)
    let E = num.toString().length - den.toString().length;
    const digits = (k) => {
        const s = 59 - k;
        const n = s >= 0 ? num * pow10(s) : num, d = s >= 0 ? den : den * pow10(-s);
        return [n / d, n % d !== 0n];
    };
    let [c, inexact] = digits(E);
    while (c >= pow10(60))
        [c, inexact] = digits(++E);
    while (c < pow10(59))
        [c, inexact] = digits(--E);
    if (inexact)
        c += 1n;
    // value = c · 10**(E − 59); ln of it, correctly rounded to 60 digits (half even)
    const exp10 = E - 59;
    const lnNum = exp10 >= 0 ? c * pow10(exp10) : c, lnDen = exp10 >= 0 ? 1n : pow10(-exp10);
    const L = lnFixed(lnNum, lnDen); // ln · 2**W, L > 0
    let F = L.toString().length; // ~ decimal digits of L; find k with 10**59 <= L·10**k / 2**W < 10**60
    let k = 60 - Math.floor(F - W * Math.log10(2));
    const scaled = (kk) => {
        const n = kk >= 0 ? L * pow10(kk) : L, d = kk >= 0 ? 1n << BigInt(W) : (1n << BigInt(W)) * pow10(-kk);
        return [n / d, n % d, d];
    };
    let [q, rem, d] = scaled(k);
    while (q >= pow10(60))
        [q, rem, d] = scaled(--k);
    while (q < pow10(59))
        [q, rem, d] = scaled(++k);
    if (2n * rem > d || (2n * rem === d && (q & 1n)))
        q += 1n;
    q += 1n; // next_plus: one unit in the 60th digit up
    F = 0;
    let eps = k >= 0 ? doubleUp(q, pow10(k)) : doubleUp(q * pow10(-k), 1n);
    // final guard: e**eps >= ratio, exactly
    for (;;) {
        const lb = expLowerBound(eps);
        if (num * lb.den <= lb.num * den)
            return eps;
        eps = nextUp(eps);
    }
}
