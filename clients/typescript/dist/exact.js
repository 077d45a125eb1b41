/**
 * Exact arithmetic for privacy constants, the same numbers as the Python client's
 * `ldp_plugin/exact.py`: a certain rational lower bound of e**x (e**x correctly rounded to 60
 * significant digits, then one unit in the last place down) and integer thresholds over 2**64.
 * Everything is BigInt: no float enters a decision.
 */
export const TWO64 = 1n << 64n;
/** The exact value of a finite double as mantissa / 2**shift (shift >= 0) or mantissa * 2**-shift. */
export function floatToRational(x) {
    if (!Number.isFinite(x))
        throw new RangeError("a finite number is required");
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x);
    const hi = view.getUint32(0);
    const lo = view.getUint32(4);
    const sign = hi >>> 31 ? -1n : 1n;
    const expBits = (hi >>> 20) & 0x7ff;
    let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    let e;
    if (expBits === 0) {
        e = -1074;
    }
    else {
        mant |= 1n << 52n;
        e = expBits - 1075;
    }
    if (e >= 0)
        return { num: sign * (mant << BigInt(e)), den: 1n };
    return { num: sign * mant, den: 1n << BigInt(-e) };
}
const PREC = 60;
const POW10 = [1n];
function pow10(k) {
    while (POW10.length <= k)
        POW10.push(POW10[POW10.length - 1] * 10n);
    return POW10[k];
}
function bitLength(v) {
    return v === 0n ? 0 : v.toString(2).length;
}
/** e**x (x >= 0, a double) as a fixed-point integer over 2**W, relative error below 2**-(W-80). */
function expFixed(x, W) {
    const { num, den } = floatToRational(x);
    if (num < 0n)
        throw new RangeError("exp_lower_bound is defined here for x >= 0");
    // reduce: y = x / 2**r with y < 2**-8
    let r = 0;
    while ((num << 8n) >= den << BigInt(r))
        r++;
    const one = 1n << BigInt(W);
    const y = (num << BigInt(W)) / (den << BigInt(r)); // floor, error < 1 ulp
    let sum = one;
    let term = one;
    for (let k = 1; term !== 0n; k++) {
        term = (term * y) >> BigInt(W);
        term /= BigInt(k);
        sum += term;
    }
    for (let i = 0; i < r; i++)
        sum = (sum * sum) >> BigInt(W);
    return sum;
}
/**
 * The Python client's `exp_lower_bound(x)`: Decimal's exp of the double `x`, correctly rounded
 * (half even) to 60 significant digits, then `next_minus` (one unit in the 60th digit down).
 * A rational certainly <= e**x.
 */
export function expLowerBound(x) {
    if (x === 0) {
        // Decimal exp(0) = 1 exactly; next_minus(1) = 0.999…9 (60 nines)
        return { num: pow10(PREC) - 1n, den: pow10(PREC) };
    }
    const W = 900;
    const v = expFixed(x, W); // e**x ≈ v / 2**W
    // decimal exponent E with 10**E <= e**x < 10**(E+1)
    let E = Math.floor(x / Math.LN10);
    const scaled = (k) => {
        // e**x · 10**(PREC-1-k) as floor and remainder (numerator over 2**W)
        const s = PREC - 1 - k;
        const n = s >= 0 ? v * pow10(s) : v;
        const d = s >= 0 ? 1n << BigInt(W) : (1n << BigInt(W)) * pow10(-s);
        return [n / d, n % d];
    };
    let [c, rem] = scaled(E);
    while (c >= pow10(PREC)) {
        E++;
        [c, rem] = scaled(E);
    }
    while (c < pow10(PREC - 1)) {
        E--;
        [c, rem] = scaled(E);
    }
    const s = PREC - 1 - E;
    const d = s >= 0 ? 1n << BigInt(W) : (1n << BigInt(W)) * pow10(-s);
    // round half even
    const twice = 2n * rem;
    if (twice > d || (twice === d && (c & 1n) === 1n))
        c += 1n;
    if (c === pow10(PREC)) {
        c = pow10(PREC - 1);
        E++;
    }
    // next_minus: one unit in the last (60th) place down
    let coef;
    let exp10; // value = coef · 10**exp10
    if (c === pow10(PREC - 1)) {
        coef = pow10(PREC) - 1n;
        exp10 = E - PREC;
    }
    else {
        coef = c - 1n;
        exp10 = E - (PREC - 1);
    }
    void bitLength;
    return exp10 >= 0 ? { num: coef * pow10(exp10), den: 1n } : { num: coef, den: pow10(-exp10) };
}
/** floor(p · 2**64) for a rational p (an event of probability T/2**64 <= p). */
export function floorThreshold(p) {
    return (p.num * TWO64) / p.den;
}
/** ceil(p · 2**64) for a rational p >= 0. */
export function ceilThreshold(p) {
    return (p.num * TWO64 + p.den - 1n) / p.den;
}
/** a <= b for rationals. */
export function leq(a, b) {
    return a.num * b.den <= b.num * a.den;
}
