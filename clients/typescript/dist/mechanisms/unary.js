/**
 * Unary encodings, as the Python client's `RAPPOR` (k-RAPPOR / SUE, Kairouz, Bonawitz & Ramage,
 * ICML 2016, eq. 14–15) and `OUE` (Wang, Blocki, Li & Jha 2017): the one-hot vector of the item,
 * bit x kept 1 with probability p, every other bit 1 with probability q, both integer thresholds
 * over 2**64; the realized ratio p(1 − q)/((1 − p) q) is checked <= e**ε exactly. Report: d bits
 * packed LSB first into ceil(d/8) bytes.
 */
import { Bernoulli, PackedRow, bernoulliRow } from "../bernoulli.js";
import { ceilThreshold, expLowerBound, floorThreshold, leq, TWO64 } from "../exact.js";
import { ClientMechanism } from "./base.js";
export class UnaryEncoding extends ClientMechanism {
    constructor(params) {
        super(params);
        const [tp, tq, L] = this.thresholds();
        this.pThreshold = tp;
        this.qThreshold = tq;
        if (!(tp > 0n && tp < TWO64 && tq > 0n && tq < TWO64))
            throw new RangeError("epsilon is out of the usable range: the probabilities round to 0 or 1 in 64-bit thresholds");
        if (tp <= tq)
            throw new RangeError("epsilon is too small: 64-bit thresholds cannot separate p* from q*");
        if (!leq({ num: tp * (TWO64 - tq), den: (TWO64 - tp) * tq }, L))
            throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
        this.own = new Bernoulli(tp);
        this.row = new PackedRow(tq, this.d);
    }
    get nBytes() {
        return (this.d + 7) >> 3;
    }
    reportFields() {
        return [{ name: "report", dtype: "uint8", width: this.nBytes, kind: "bits", bound: this.d }];
    }
    randomizeCode(code, src) {
        return { report: bernoulliRow(src, this.row, [code], this.own) };
    }
}
export class RAPPOR extends UnaryEncoding {
    constructor() {
        super(...arguments);
        this.name = "rappor";
    }
    thresholds() {
        const h = expLowerBound(this.epsilon / 2);
        const tp = floorThreshold({ num: h.num, den: h.num + h.den });
        const L = expLowerBound(this.epsilon);
        return [tp, TWO64 - tp, L];
    }
}
export class OUE extends UnaryEncoding {
    constructor() {
        super(...arguments);
        this.name = "oue";
    }
    thresholds() {
        const L = expLowerBound(this.epsilon);
        return [TWO64 / 2n, ceilThreshold({ num: L.den, den: L.num + L.den }), L];
    }
}
