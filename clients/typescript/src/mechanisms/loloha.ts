/**
 * LOLOHA (Arcolezi et al., EDBT 2023), as the Python client's `LOLOHA`: memoized by the user's
 * secret key. A fixed per-user hash seed (a keyed PRF of the key), the value hashed into g cells,
 * a permanent randomized response GRR(ε∞) of the hashed cell memoized per cell (PRF words against
 * the integer threshold T1, an exact PRF-uniform other cell), then an instantaneous GRR over g from
 * the CSPRNG (threshold T2, chosen so one report is ε₁-LDP exactly). The PRF is SHAKE-256(len(key)
 * ‖ key ‖ fingerprint ‖ tag ‖ unit), the fingerprint the SHA-256 of the Python repr of the core
 * spec: the same key gives the same permanent answers in both clients.
 *
 * Charges (`collectionCost(t)`): the increment of the user-level lifetime bound at collection t
 * (`ldp_plugin/mechanisms/lifetime.py`), or the value-level one if the spec names
 * relation = "value" — a function of t only.
 */
import { Bernoulli, uniformInt } from "../bernoulli.js";
import { expLowerBound, floatToRational, TWO64 } from "../exact.js";
import { Frac } from "../device/fraction.js";
import { intItemKey, seededHash } from "../hashing.js";
import { epsilonOfRatio, ratToDouble } from "../lnexact.js";
import { PyFloat, pyFloatRepr, type PyJSON } from "../pyjson.js";
import { sha256 } from "../sha256.js";
import { shake256 } from "../shake256.js";
import type { RandomSource } from "../source.js";
import { secureSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { checkEpsilon, ClientMechanism, type Label } from "./base.js";

type Params = { epsilon_perm: number; epsilon_1: number; d: number; g: number; relation?: string };

const enc = new TextEncoder();
const frac = (x: number): Frac => {
  const r = floatToRational(x);
  return new Frac(r.num, r.den);
};

function prfWords(key: Uint8Array, fp: Uint8Array, tag: string, unit: number | null, count: number): bigint[] {
  const t = enc.encode(tag);
  const u = unit === null ? new Uint8Array(0) : new Uint8Array(8);
  if (unit !== null) new DataView(u.buffer).setBigInt64(0, BigInt(unit), true);
  const data = new Uint8Array(1 + key.length + fp.length + t.length + u.length);
  data[0] = key.length;
  data.set(key, 1);
  data.set(fp, 1 + key.length);
  data.set(t, 1 + key.length + fp.length);
  data.set(u, 1 + key.length + fp.length + t.length);
  const out = shake256(data, 8 * count);
  const dv = new DataView(out.buffer);
  return Array.from({ length: count }, (_, i) => dv.getBigUint64(8 * i, true));
}

export class LOLOHA extends ClientMechanism {
  readonly name: string = "loloha";
  readonly needsUserKey = true;
  readonly epsilonPerm: number;
  readonly g: number;
  readonly relation: "user" | "value";
  readonly T1: bigint;
  readonly T2: bigint;
  private readonly fp: Uint8Array;
  private readonly inst: Bernoulli;
  readonly epsInst: Frac;

  constructor(params: Params) {
    const e1 = checkEpsilon(params.epsilon_1);
    super({ epsilon: e1, d: params.d });
    const einf = checkEpsilon(params.epsilon_perm);
    if (e1 >= einf) throw new RangeError("epsilon_1 must be below epsilon_perm");
    if (!Number.isInteger(params.d) || params.d < 2 || params.d > 2 ** 16) throw new RangeError("d must be an integer in [2, 2^16]");
    const g = params.g;
    if (!Number.isInteger(g) || g < 2 || g > 2 ** 16) throw new RangeError("g must be an integer in [2, 2^16]");
    const relation = params.relation ?? "user";
    if (relation !== "user" && relation !== "value") throw new RangeError("relation must be 'user' or 'value'");
    this.epsilonPerm = einf;
    this.g = g;
    this.relation = relation;
    // the permanent and instantaneous layers (`_grr_layers`)
    const Wd = TWO64, k = BigInt(g), k1 = k - 1n;
    const A = expLowerBound(einf);
    let T1 = (A.num * Wd) / (A.num + k1 * A.den);
    if (T1 > Wd - 1n) T1 = Wd - 1n;
    const b = Math.exp(e1);
    const f1 = Number(T1) / 2 ** 64;
    const g1 = ratToDouble(Wd - T1, Wd * k1);
    const p2f = (b * (1 - g1) - (1 - f1)) / (f1 * (g - 1) - (1 - f1) - b * g1 * (g - 1) + b * (1 - g1));
    const clipped = floatToRational(Math.min(Math.max(p2f, 1.0 / g), 1.0));
    let T2 = (clipped.num * Wd) / clipped.den;
    if (T2 > Wd - 1n) T2 = Wd - 1n;
    const E1 = expLowerBound(e1);
    for (;;) {
      const ps = T1 * T2 * k1 * k1 + (Wd - T1) * (Wd - T2) * k1;
      const qs = (Wd - T1) * T2 * k1 + (k1 * Wd - Wd + T1) * (Wd - T2);
      if (ps * E1.den <= E1.num * qs) break;
      T2 -= T2 >> 40n > 1n ? T2 >> 40n : 1n;
    }
    this.T1 = T1;
    this.T2 = T2;
    this.inst = new Bernoulli(T2);
    const core = `{'name': 'loloha', 'params': {'epsilon_perm': ${pyFloatRepr(einf)}, 'epsilon_1': ${pyFloatRepr(e1)}, 'd': ${this.d}, 'g': ${g}}}`;
    this.fp = sha256(enc.encode(core)).subarray(0, 16);
    // ε_inst: the instantaneous GRR's ratio max(p2/q2, q2/p2), rounded up to a double
    const p2 = T2 * k1, q2 = Wd - T2; // p2/q2 = T2 (g − 1)/(2**64 − T2)
    this.epsInst = frac(epsilonOfRatio(p2 >= q2 ? { num: p2, den: q2 } : { num: q2, den: p2 }));
  }

  protected specParams(): Record<string, PyJSON> {
    return { epsilon_perm: new PyFloat(this.epsilonPerm), epsilon_1: new PyFloat(this.epsilon), d: this.d, g: this.g, relation: this.relation };
  }

  reportFields(): ReportField[] {
    return [{ name: "seed", dtype: "uint64", width: 0, kind: "int", bound: null }, { name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.g }];
  }

  /** One collection of the user whose secret key is `key` (16 to 64 bytes). */
  randomizeKeyed(value: Label, key: Uint8Array, src: RandomSource = secureSource()): Report {
    if (!(key instanceof Uint8Array) || key.length < 16 || key.length > 64) throw new RangeError("user keys must be 16 to 64 secret bytes");
    const code = this.encode(value);
    const seed = prfWords(key, this.fp, "hash-seed", null, 1)[0];
    const unit = seededHash(intItemKey(code), seed, this.g);
    // permanent GRR(ε∞) of the hashed cell, memoized by the key: PRF words only
    const words = prfWords(key, this.fp, "prr", unit, 4);
    const keep = words[0] < this.T1;
    let other = -1;
    const top = (TWO64 / BigInt(this.g - 1)) * BigInt(this.g - 1) - 1n;
    for (let batch = words.slice(1); other < 0; batch = prfWords(key, this.fp, "prr+", unit, 4)) {
      if (this.g - 1 === 1) other = 0;
      for (const w of batch) if (other < 0 && w <= top) other = Number(w % BigInt(this.g - 1));
    }
    if (other >= unit) other += 1;
    const perm = keep ? unit : other;
    // instantaneous GRR over g from the source
    const keepInst = this.inst.draw(src);
    let o = uniformInt(src, this.g - 1);
    if (o >= perm) o += 1;
    return { seed, report: keepInst ? perm : o };
  }

  randomize(): Report {
    throw new RangeError("loloha needs the user's key: use randomizeKeyed (a Device supplies it)");
  }

  randomizeCode(): Report {
    throw new RangeError("loloha needs the user's key: use randomizeKeyed (a Device supplies it)");
  }

  /** The lifetime bound after t collections (`lifetime.bound`), exact. */
  lifetimeBound(t: number, relation: "user" | "value" = this.relation): Frac {
    const zero = new Frac(0n, 1n);
    if (t === 0) return zero;
    const e1 = frac(this.epsilon), einst = this.epsInst, eperm = frac(this.epsilonPerm);
    const units = this.g, U = this.g;
    const mul = (f: Frac, n: number, d = 1): Frac => new Frac(f.num * BigInt(n), f.den * BigInt(d));
    const min = (...xs: Frac[]): Frac => xs.reduce((a, b) => (b.cmp(a) < 0 ? b : a));
    const chain = e1.add(mul(einst, t - 1));
    const K = Math.min(t, U, units);
    const tri = mul(mul(eperm, K).add(mul(einst, t)), units - 1, units);
    const pairing = mul(eperm, K).add(mul(einst, (K - 1) * t, K));
    const user = min(chain, tri, pairing);
    if (relation === "user") return user;
    return min(mul(eperm, Math.min(t, U)), user);
  }

  /** What collection t (1-based) adds: bound(t) − bound(t − 1) under the spec's relation. */
  collectionCost(t: number): Frac {
    return this.lifetimeBound(t).sub(this.lifetimeBound(t - 1));
  }
}
