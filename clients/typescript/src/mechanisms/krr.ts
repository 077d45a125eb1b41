/**
 * k-ary randomized response (Kairouz, Bonawitz & Ramage, ICML 2016, eq. 6) and Warner's RR (d = 2
 * on booleans, eq. 3), as the Python client's `KRR`/`WarnerRR`: keep the true item iff one Bernoulli
 * of threshold T = floor(2**64 · L/(L + d − 1)) fires (L a certain lower bound of e**ε), else an
 * exactly uniform other item. Realized ratio T(d − 1)/(2**64 − T) <= L <= e**ε, checked here.
 */
import { Bernoulli, uniformInt } from "../bernoulli.js";
import { expLowerBound, floorThreshold, leq, TWO64 } from "../exact.js";
import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
import type { PyJSON } from "../pyjson.js";

export class KRR extends ClientMechanism {
  readonly name: string = "krr";
  readonly keepThreshold: bigint;
  readonly keep: Bernoulli;

  constructor(params: { epsilon: number; d?: number | null; categories?: readonly Label[] | null }) {
    super(params);
    const L = expLowerBound(this.epsilon);
    const d1 = BigInt(this.d - 1);
    this.keepThreshold = floorThreshold({ num: L.num, den: L.num + d1 * L.den });
    const T = this.keepThreshold;
    if (T <= 0n || T >= TWO64) throw new RangeError("epsilon is out of the usable range: the probabilities round to 0 or 1 in 64-bit thresholds");
    if (T * (1n + d1) <= TWO64) throw new RangeError("epsilon is too small: 64-bit thresholds cannot separate p* from q*");
    if (!leq({ num: T * d1, den: TWO64 - T }, L)) throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
    this.keep = new Bernoulli(T);
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.d }];
  }

  randomizeCode(code: number, src: RandomSource): Report {
    const keep = this.keep.draw(src);
    let other = uniformInt(src, this.d - 1);
    if (other >= code) other += 1; // uniform over the d − 1 others
    return { report: keep ? code : other };
  }
}

export class WarnerRR extends KRR {
  readonly name: string = "warner";

  constructor(params: { epsilon: number }) {
    super({ epsilon: params.epsilon, categories: [false, true] });
  }

  protected specParams(): Record<string, PyJSON> {
    const p = super.specParams();
    delete p.d;
    delete p.categories;
    return p;
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "bool", width: 0, kind: "bool", bound: null }];
  }

  randomizeCode(code: number, src: RandomSource): Report {
    return { report: (super.randomizeCode(code, src).report as number) === 1 };
  }
}
