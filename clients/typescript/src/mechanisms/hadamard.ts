/**
 * Hadamard response and the Hadamard mechanism, as the Python client's `HadamardResponse` and
 * `HadamardMechanism` (K the smallest power of two > d, row x + 1 of the Sylvester matrix, the one
 * Bernoulli of threshold T = floor(2**64 · L/(L + 1)) and one exactly uniform draw in [0, K);
 * realized ratio T/(2**64 − T) <= L <= e**ε, checked here).
 */
import { Bernoulli, uniformInt } from "../bernoulli.js";
import { expLowerBound, floorThreshold, leq, TWO64 } from "../exact.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";

type Params = { epsilon: number; d?: number | null; categories?: readonly Label[] | null };

function parity(v: number): number {
  v ^= v >>> 16;
  v ^= v >>> 8;
  v ^= v >>> 4;
  v ^= v >>> 2;
  v ^= v >>> 1;
  return v & 1;
}

function bitLength(d: number): number {
  return d.toString(2).length; // Python's int.bit_length for d >= 1
}

abstract class HadamardBase extends ClientMechanism {
  readonly K: number;
  readonly threshold: bigint;
  protected readonly coin: Bernoulli;

  constructor(params: Params) {
    super(params);
    if (this.d >= 2 ** 31) throw new RangeError("d must be below 2**31 for the Hadamard mechanisms");
    this.K = 2 ** bitLength(this.d);
    const L = expLowerBound(this.epsilon);
    const T = floorThreshold({ num: L.num, den: L.num + L.den });
    if (T <= TWO64 / 2n || T >= TWO64) throw new RangeError("epsilon is out of the usable range of 64-bit thresholds");
    if (!leq({ num: T, den: TWO64 - T }, L)) throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
    this.threshold = T;
    this.coin = new Bernoulli(T);
  }
}

export class HadamardResponse extends HadamardBase {
  readonly name: string = "hadamard";

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.K }];
  }

  randomizeCode(code: number, src: RandomSource): Report {
    const row = (code + 1) >>> 0;
    const inside = this.coin.draw(src);
    let y = uniformInt(src, this.K) >>> 0;
    if (parity(row & y) !== (inside ? 0 : 1)) y = (y ^ (row & -row)) >>> 0; // flip the lowest set bit of x + 1
    return { report: y };
  }
}

export class HadamardMechanism extends HadamardBase {
  readonly name: string = "hadamard-mechanism";

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: 2 * this.K }];
  }

  randomizeCode(code: number, src: RandomSource): Report {
    const j = uniformInt(src, this.K) >>> 0;
    const plus = parity(((code + 1) & j) >>> 0) === 0;
    const keep = this.coin.draw(src);
    return { report: j * 2 + (plus === keep ? 1 : 0) };
  }
}
