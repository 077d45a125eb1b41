/**
 * Cohort mechanisms, as the Python client's `ORR`, `ORAPPOR`, `CMS` and `HCMS` (Kairouz, Bonawitz &
 * Ramage, ICML 2016, §5; Apple, "Learning with Privacy at Scale", 2017): a data-independent cohort
 * drawn uniformly (one exact uniform integer), the item's cell(s) in that cohort — the seeded hash
 * of its key (open alphabet) or the cohort's seeded permutation of the domain (closed alphabet,
 * §5.4) — then k-RR over the k cells (O-RR), per-bit randomized response of the Bloom filter with
 * ε/(2h) per bit (O-RAPPOR, CMS with h = 1), or one ±1 Hadamard coefficient by Warner's randomized
 * response (HCMS). Realized ratios are checked <= e**ε exactly. Report: (cohort u32, value).
 */
import { Bernoulli, PackedRow, bernoulliRow, uniformInt } from "../bernoulli.js";
import { expLowerBound, floorThreshold, leq, TWO64, type Rational } from "../exact.js";
import { cohortSeeds, itemKey, seededHash, seededPermutation } from "../hashing.js";
import type { PyJSON } from "../pyjson.js";
import { secureSource, type RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
import { KRR } from "./krr.js";

type CohortParams = { epsilon: number; k: number; cohorts?: number; hash_seed?: number | bigint; d?: number | null; categories?: readonly Label[] | null; h?: number };

abstract class CohortMechanism extends ClientMechanism {
  readonly k: number;
  readonly cohorts: number;
  readonly hashSeed: bigint;
  readonly h: number;
  private readonly seeds: bigint[]; // [cohort · h + t]
  private readonly table: number[][][] | null; // [cohort][t][code] (closed alphabet)

  constructor(params: CohortParams, h = 1) {
    super(params, true);
    const { k } = params;
    const C = params.cohorts ?? 1;
    if (!Number.isInteger(k) || k < 2 || k > 2 ** 24) throw new RangeError("k must be an integer in [2, 2**24]");
    if (!Number.isInteger(C) || C < 1 || C > 2 ** 20) throw new RangeError("cohorts must be an integer in [1, 2**20]");
    const seed = BigInt(params.hash_seed ?? 0);
    if (seed < 0n || seed >= TWO64) throw new RangeError("hash_seed must be an integer in [0, 2**64)");
    if ((params as { underdetermined?: unknown }).underdetermined) throw new RangeError("underdetermined designs are for channel studies, not devices");
    this.k = k;
    this.cohorts = C;
    this.hashSeed = seed;
    this.h = h;
    this.seeds = cohortSeeds(seed, C * h);
    if (this.closed) {
      if (C * h * this.d > 2 ** 28) throw new RangeError("closed alphabet: cohorts · hashes · d must be at most 2**28");
      const keys = (this.categories ?? Array.from({ length: this.d }, (_, i) => i)).map((c) => itemKey(c as string | number));
      this.table = [];
      for (let c = 0; c < C; c++) {
        const row: number[][] = [];
        for (let t = 0; t < h; t++) row.push(seededPermutation(keys, this.seeds[c * h + t]).map((r) => r % k));
        this.table.push(row);
      }
    } else this.table = null;
  }

  protected specParams(): Record<string, PyJSON> {
    const p = super.specParams();
    return { epsilon: p.epsilon, k: this.k, cohorts: this.cohorts, hash_seed: this.hashSeed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(this.hashSeed) : this.hashSeed,
      d: this.closed ? this.d : null, categories: this.categories };
  }

  /** Closed alphabet: the item's code; open alphabet: its 64-bit key (strings and integers). */
  encodeItem(value: Label): bigint {
    if (this.closed) return BigInt(this.encode(value));
    if (typeof value === "boolean") throw new RangeError("items must be integers or strings");
    return itemKey(value);
  }

  randomize(value: Label, src: RandomSource = secureSource()): Report {
    return this.randomizeItem(this.encodeItem(value), src);
  }

  randomizeCode(code: number, src: RandomSource): Report {
    return this.randomizeItem(BigInt(code), src);
  }

  /** One report from an encoded item (a code, closed alphabet; a 64-bit key, open alphabet). */
  randomizeItem(item: bigint, s: RandomSource): Report {
    const cohort = uniformInt(s, this.cohorts);
    const pos: number[] = [];
    for (let t = 0; t < this.h; t++) {
      pos.push(this.table !== null ? this.table[cohort][t][Number(item)] : seededHash(item, this.seeds[cohort * this.h + t], this.k));
    }
    return { cohort, report: this.randomizePositions(pos, s) };
  }

  protected abstract randomizePositions(pos: number[], src: RandomSource): number | Uint8Array;
}

export class ORR extends CohortMechanism {
  readonly name: string = "orr";
  readonly krr: KRR;

  constructor(params: CohortParams) {
    super(params);
    this.krr = new KRR({ epsilon: this.epsilon, d: this.k });
  }

  reportFields(): ReportField[] {
    return [{ name: "cohort", dtype: "uint32", width: 0, kind: "int", bound: this.cohorts }, { name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.k }];
  }

  protected randomizePositions(pos: number[], src: RandomSource): number {
    return this.krr.randomizeCode(pos[0], src).report as number;
  }
}

export class ORAPPOR extends CohortMechanism {
  readonly name: string = "orappor";
  readonly pThreshold: bigint;
  private readonly own: Bernoulli;
  private readonly row: PackedRow;

  constructor(params: CohortParams) {
    const h = params.h ?? 1;
    if (!Number.isInteger(h) || h < 1 || h > 16) throw new RangeError("h (hash functions per cohort) must be an integer in [1, 16]");
    super(params, h);
    const m = 2 * h;
    const L = expLowerBound(this.epsilon / m);
    const bound = expLowerBound(this.epsilon);
    let tp = floorThreshold({ num: L.num, den: L.num + L.den });
    const within = (t: bigint): boolean => leq({ num: t ** BigInt(m), den: (TWO64 - t) ** BigInt(m) }, bound as Rational);
    while (tp > TWO64 / 2n && !within(tp)) tp -= (tp >> 52n) > 1n ? tp >> 52n : 1n;
    if (!(tp > TWO64 / 2n && tp < TWO64) || !within(tp)) throw new RangeError("epsilon is out of the usable range of 64-bit thresholds");
    this.pThreshold = tp;
    this.own = new Bernoulli(tp);
    this.row = new PackedRow(TWO64 - tp, this.k);
  }

  protected specParams(): Record<string, PyJSON> {
    return { ...super.specParams(), h: this.h };
  }

  reportFields(): ReportField[] {
    return [{ name: "cohort", dtype: "uint32", width: 0, kind: "int", bound: this.cohorts },
      { name: "report", dtype: "uint8", width: (this.k + 7) >> 3, kind: "bits", bound: this.k }];
  }

  protected randomizePositions(pos: number[], src: RandomSource): Uint8Array {
    return bernoulliRow(src, this.row, pos, this.own);
  }
}

export class CMS extends ORAPPOR {
  readonly name: string = "cms";

  constructor(params: CohortParams) {
    if ((params.h ?? 1) !== 1) throw new RangeError("cms uses one hash per cohort: h must be 1");
    super({ ...params, h: 1 });
  }
}

export class HCMS extends CohortMechanism {
  readonly name: string = "hcms";
  private readonly rr: KRR;

  constructor(params: CohortParams) {
    super(params);
    if (this.k & (this.k - 1)) throw new RangeError("k (the sketch width) must be a power of 2 in [2, 2**24]");
    this.rr = new KRR({ epsilon: this.epsilon, d: 2 });
  }

  reportFields(): ReportField[] {
    return [{ name: "cohort", dtype: "uint32", width: 0, kind: "int", bound: this.cohorts }, { name: "report", dtype: "uint32", width: 0, kind: "int", bound: 2 * this.k }];
  }

  protected randomizePositions(pos: number[], src: RandomSource): number {
    const row = uniformInt(src, this.k);
    let v = (pos[0] & row) >>> 0;
    v ^= v >>> 16; v ^= v >>> 8; v ^= v >>> 4; v ^= v >>> 2; v ^= v >>> 1;
    const b = this.rr.randomizeCode(v & 1, src).report as number;
    return row * 2 + b;
  }
}
