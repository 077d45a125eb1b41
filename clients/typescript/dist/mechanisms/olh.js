/**
 * Optimized local hashing (Wang, Blocki, Li & Jha, USENIX Security 2017, §4.4), as the Python
 * client's `OLH`: a fresh uniform 64-bit seed s (8 random bytes, little-endian), the item hashed
 * into [0, g) by the seeded hash, then k-RR over g values. Given the data-independent seed the
 * report is k-RR of a function of the input, so its realized ratio is k-RR's, checked <= e**ε.
 * Report: (seed u64, hashed value u32).
 */
import { intItemKey, itemKey, seededHash, wordLE } from "../hashing.js";
import { ClientMechanism } from "./base.js";
import { KRR } from "./krr.js";
/** OLH's default hash range round(e**ε + 1) (the Python client's `olh_default_g`). */
export function olhDefaultG(epsilon) {
    if (epsilon > 22)
        return 2 ** 31;
    return Math.min(2 ** 31, Math.max(2, Math.floor(Math.exp(epsilon) + 1.5)));
}
export class OLH extends ClientMechanism {
    constructor(params) {
        super(params);
        this.name = "olh";
        const g = params.g == null || params.g === "auto" ? olhDefaultG(this.epsilon) : params.g;
        if (!Number.isInteger(g) || g < 2 || g > 2 ** 31)
            throw new RangeError("g must be 'auto' or an integer in [2, 2**31]");
        this.g = g;
        this.krr = new KRR({ epsilon: this.epsilon, d: g });
        if (this.categories !== null) {
            if (!this.categories.every((c) => typeof c === "string" || (typeof c === "number" && Number.isInteger(c)))) {
                throw new RangeError("olh categories must be integers or strings");
            }
            this.keys = this.categories.map((c) => itemKey(c));
        }
        else
            this.keys = null;
    }
    specParams() {
        return { ...super.specParams(), g: this.g };
    }
    reportFields() {
        return [
            { name: "seed", dtype: "uint64", width: 0, kind: "int", bound: null },
            { name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.g },
        ];
    }
    randomizeCode(code, src) {
        const seed = wordLE(src.randomBytes(8));
        const key = this.keys === null ? intItemKey(code) : this.keys[code];
        const y = this.krr.randomizeCode(seededHash(key, seed, this.g), src).report;
        return { seed, report: y };
    }
}
