/**
 * Padding-and-sampling for sets of at most m items (the Python client's `SampleOne`; Wang et al.,
 * "Locally differentially private protocols for frequency estimation", and the set-valued
 * pad-and-sample of Qin et al., CCS 2016): the user's set is padded to m slots with the reserved
 * PAD item, one slot is drawn exactly uniformly (a set longer than m: an error, or with
 * on_long = "sample" a uniform item of the whole set), and the item is reported by the inner
 * categorical mechanism over the domain plus PAD. ε-LDP per user for the whole set. The wire
 * fingerprint is this wrapper's spec; the reports are the padded mechanism's.
 */
import { uniformInt } from "../bernoulli.js";
import { itemKey } from "../hashing.js";
import type { PyJSON } from "../pyjson.js";
import { secureSource, type RandomSource } from "../source.js";
import { toWire, wireFingerprint, type Report, type ReportField } from "../wire.js";
import type { ClientMechanism, Label } from "./base.js";

export const PAD = "\u0000ldp-plugin:pad\u0000";

type Inner = ClientMechanism & { randomizeItem?: (item: bigint, src: RandomSource) => Report };

export class SampleOne {
  readonly name = "sample-one";
  readonly padded: Inner;
  private _fingerprint: Uint8Array | null = null;

  constructor(readonly mechanism: Inner, readonly m: number, readonly onLong: "error" | "sample", makePadded: (padded: { d?: number; categories?: Label[] }) => Inner) {
    if (!Number.isInteger(m) || m < 1 || m > 2 ** 20) throw new RangeError("m (the maximum set size) must be an integer in [1, 2**20]");
    if (onLong !== "error" && onLong !== "sample") throw new RangeError("on_long must be one of error, sample");
    if (!mechanism.closed) this.padded = mechanism;
    else if (mechanism.categories !== null) {
      if (mechanism.categories.includes(PAD)) throw new RangeError("the categories already contain the reserved PAD item");
      this.padded = makePadded({ categories: [...mechanism.categories, PAD] });
    } else this.padded = makePadded({ d: mechanism.d + 1 });
  }

  get epsilon(): number {
    return this.padded.epsilon;
  }

  spec(): PyJSON {
    return { set: "sample-one", m: this.m, on_long: this.onLong, mechanism: this.mechanism.spec() };
  }

  get fingerprint(): Uint8Array {
    if (this._fingerprint === null) this._fingerprint = wireFingerprint(this.spec());
    return this._fingerprint;
  }

  reportFields(): ReportField[] {
    return this.padded.reportFields();
  }

  /** One user's report of the set `items` (a single item is a set of one). */
  randomize(items: Label | Label[], src: RandomSource = secureSource()): Report {
    const set = Array.isArray(items) ? items : [items];
    const closed = this.mechanism.closed;
    const enc = set.map((v) => {
      if (closed) return BigInt(this.mechanism.encode(v));
      if (v === PAD) throw new RangeError("sets contain the reserved PAD item");
      if (typeof v === "boolean") throw new RangeError("items must be integers or strings");
      return itemKey(v);
    });
    if (new Set(enc).size !== enc.length) throw new RangeError("a set has duplicate items");
    const long = enc.length > this.m;
    if (long && this.onLong === "error") throw new RangeError(`a set has more than m=${this.m} items; raise m or use on_long='sample'`);
    let j = uniformInt(src, this.m);
    if (long) j = uniformInt(src, enc.length);
    const pad = closed ? BigInt(this.mechanism.d) : itemKey(PAD);
    const item = j < enc.length ? enc[j] : pad;
    if (this.padded.randomizeItem) return this.padded.randomizeItem(item, src);
    return this.padded.randomizeCode(Number(item), src);
  }

  randomizeCode(code: number, src: RandomSource): Report {
    return this.randomize(this.mechanism.closed && this.mechanism.categories ? this.mechanism.categories[code] : code, src);
  }

  toWire(report: Report, tag: Uint8Array = new Uint8Array(0)): Uint8Array {
    return toWire(this.reportFields(), this.fingerprint, [report], tag);
  }
}
