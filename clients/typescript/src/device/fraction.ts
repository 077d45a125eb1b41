/** Exact non-negative rationals from decimal text ("2", "0.5", "1e-3", "1/3"), as the Python
 * device's `Fraction(str(value))`: budgets are compared and added exactly, never in floats. */
export class Frac {
  readonly num: bigint;
  readonly den: bigint;

  constructor(num: bigint, den: bigint) {
    if (den <= 0n) throw new RangeError("denominator must be > 0");
    const g = gcd(num < 0n ? -num : num, den);
    this.num = num / g;
    this.den = den / g;
  }

  static parse(text: string, name = "value"): Frac {
    if (typeof text !== "string") throw new RangeError(`${name} must be exact decimal text such as "2" or "0.5"`);
    const t = text.trim();
    const frac = /^([+-]?\d+)\/(\d+)$/.exec(t);
    if (frac) {
      if (BigInt(frac[2]) === 0n) throw new RangeError(`${name} must be exact decimal text such as "2" or "0.5"`);
      return new Frac(BigInt(frac[1]), BigInt(frac[2]));
    }
    const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(t);
    if (!m || (m[2] === "" && (m[3] ?? "") === "")) throw new RangeError(`${name} must be exact decimal text such as "2" or "0.5"`);
    const digits = (m[2] || "0") + (m[3] ?? "");
    let exp = -(m[3] ?? "").length + (m[4] ? parseInt(m[4], 10) : 0);
    let num = BigInt(digits) * (m[1] === "-" ? -1n : 1n);
    let den = 1n;
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den = 10n ** BigInt(-exp);
    return new Frac(num, den);
  }

  add(o: Frac): Frac {
    return new Frac(this.num * o.den + o.num * this.den, this.den * o.den);
  }
  sub(o: Frac): Frac {
    return new Frac(this.num * o.den - o.num * this.den, this.den * o.den);
  }
  cmp(o: Frac): number {
    const a = this.num * o.den, b = o.num * this.den;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  toString(): string {
    return this.den === 1n ? this.num.toString() : `${this.num}/${this.den}`;
  }
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a === 0n ? 1n : a;
}
