/** What every client mechanism provides: its spec (the Python client's `spec()`), its report
 * fields and wire fingerprint, its exact thresholds, and a randomizer for one user. */
import { PyFloat, type PyJSON } from "../pyjson.js";
import type { RandomSource } from "../source.js";
import { secureSource } from "../source.js";
import { toWire, wireFingerprint, type Report, type ReportField } from "../wire.js";

export type Label = string | number | boolean;

/** ε must be a finite positive number (the Python client's `check_epsilon`). */
export function checkEpsilon(epsilon: number): number {
  if (typeof epsilon !== "number" || !Number.isFinite(epsilon) || epsilon <= 0) {
    throw new RangeError("epsilon must be a finite number > 0");
  }
  return epsilon;
}

/** The domain: `d` codes, or `categories` labels (d = their number). */
export function checkDomain(d: number | null | undefined, categories: readonly Label[] | null | undefined): [number, Label[] | null] {
  if (categories != null) {
    const cats = Array.from(categories);
    if (cats.length < 2) throw new RangeError("categories must hold at least 2 distinct labels");
    if (new Set(cats.map((c) => `${typeof c}:${String(c)}`)).size !== cats.length) throw new RangeError("categories must be distinct");
    if (d != null && d !== cats.length) throw new RangeError(`d must equal the number of categories (${cats.length})`);
    return [cats.length, cats];
  }
  if (d == null || !Number.isInteger(d) || d < 2 || d > 2 ** 32) throw new RangeError("d must be an integer in [2, 2**32]");
  return [d, null];
}

export abstract class ClientMechanism {
  abstract readonly name: string;
  readonly epsilon: number;
  readonly d: number;
  readonly categories: Label[] | null;
  private _fingerprint: Uint8Array | null = null;
  private _index: Map<string, number> | null = null;

  constructor(params: { epsilon: number; d?: number | null; categories?: readonly Label[] | null }, openDomain = false) {
    this.epsilon = checkEpsilon(params.epsilon);
    const [d, cats] = openDomain && params.d == null && params.categories == null ? [0, null] : checkDomain(params.d, params.categories);
    this.d = d;
    this.categories = cats;
  }

  /** The spec's parameters (JSON, Python's key names and number kinds). */
  protected specParams(): Record<string, PyJSON> {
    return { epsilon: new PyFloat(this.epsilon), d: this.d, categories: this.categories };
  }

  /** The Python client's `mechanism.spec()`. */
  spec(): PyJSON {
    return { name: this.name, params: this.specParams() };
  }

  abstract reportFields(): ReportField[];

  get fingerprint(): Uint8Array {
    if (this._fingerprint === null) this._fingerprint = wireFingerprint(this.spec());
    return this._fingerprint;
  }

  /** A value → its code in [0, d) (errors never echo the value). */
  encode(value: Label): number {
    if (this.categories !== null) {
      if (this._index === null) this._index = new Map(this.categories.map((c, i) => [`${typeof c}:${String(c)}`, i]));
      const i = this._index.get(`${typeof value}:${String(value)}`);
      if (i === undefined) throw new RangeError("the value is not one of the mechanism's categories");
      return i;
    }
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value >= this.d) {
      throw new RangeError(`values must be integer codes in [0, ${this.d})`);
    }
    return value;
  }

  /** Whether the domain is closed (d items); an open-domain mechanism encodes items to 64-bit keys. */
  get closed(): boolean {
    return this.d > 0;
  }

  /** One user's report from a validated code. */
  abstract randomizeCode(code: number, src: RandomSource): Report;

  /** One user's report (default randomness: the platform CSPRNG). */
  randomize(value: Label, src: RandomSource = secureSource()): Report {
    return this.randomizeCode(this.encode(value), src);
  }

  /** The wire blob of one report (a batch of one), bound to a query by `tag`. */
  toWire(report: Report, tag: Uint8Array = new Uint8Array(0)): Uint8Array {
    return toWire(this.reportFields(), this.fingerprint, [report], tag);
  }

  /** Many users' reports as one wire batch. */
  toWireBatch(reports: readonly Report[], tag: Uint8Array = new Uint8Array(0)): Uint8Array {
    return toWire(this.reportFields(), this.fingerprint, reports, tag);
  }
}
