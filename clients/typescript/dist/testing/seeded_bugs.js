/**
 * Deliberately broken clients (not part of the bundle): each must be caught by the verification
 * of the TypeScript client (`ldp verify --client typescript`), which shows that it looks at the
 * thresholds and decisions the client really uses.
 */
import { Bernoulli, uniformInt } from "../bernoulli.js";
import { TWO64 } from "../exact.js";
import { KRR } from "../mechanisms/krr.js";
import { OUE } from "../mechanisms/unary.js";
import { PackedRow, bernoulliRow } from "../bernoulli.js";
/** k-RR keeping the true item with the complement of its threshold (p and q swapped). */
export class KRRSwappedThreshold extends KRR {
    constructor() {
        super(...arguments);
        this.swapped = new Bernoulli(TWO64 - this.keepThreshold);
    }
    randomizeCode(code, src) {
        const keep = this.swapped.draw(src);
        let other = uniformInt(src, this.d - 1);
        if (other >= code)
            other += 1;
        return { report: keep ? code : other };
    }
}
/** k-RR that forgets to skip the true item when it lies (the last item is never reported). */
export class KRRNoSkip extends KRR {
    randomizeCode(code, src) {
        const keep = this.keep.draw(src);
        const other = uniformInt(src, this.d - 1);
        return { report: keep ? code : other };
    }
}
/** OUE whose own bit is drawn with q (a threshold from the wrong place). */
export class OUEOwnBitWithQ extends OUE {
    constructor() {
        super(...arguments);
        this.wrongOwn = new Bernoulli(this.qThreshold);
        this.rowQ = new PackedRow(this.qThreshold, this.d);
    }
    randomizeCode(code, src) {
        return { report: bernoulliRow(src, this.rowQ, [code], this.wrongOwn) };
    }
}
export const SEEDED_BUGS = {
    "krr-swapped-threshold": (s) => new KRRSwappedThreshold(s.params),
    "krr-no-skip": (s) => new KRRNoSkip(s.params),
    "oue-own-bit-with-q": (s) => new OUEOwnBitWithQ(s.params),
};
