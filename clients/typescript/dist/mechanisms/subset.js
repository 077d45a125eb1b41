/**
 * The k-subset mechanism (Wang et al., arXiv 2016, eq. 5, Alg. 1–2), as the Python client's
 * `KSubset`: include the own item iff one Bernoulli of threshold
 * T = floor(2**64 · kL/(kL + d − k)) fires, the other items a uniform subset of the d − 1 others by
 * Floyd's algorithm on batched Lemire draws (`sampling/subsets.py`: several draws per uniform
 * 64-bit word, a word rejected and redrawn when w·P mod 2**64 < 2**64 mod P). Realized ratio
 * g/(1 − g)·(d − k)/k <= L, checked here. Report: the k codes, strictly increasing.
 */
import { Bernoulli } from "../bernoulli.js";
import { expLowerBound, floorThreshold, leq, TWO64 } from "../exact.js";
import { wordLE } from "../hashing.js";
import { ClientMechanism } from "./base.js";
const M64 = (1n << 64n) - 1n;
export class KSubset extends ClientMechanism {
    constructor(params) {
        super(params);
        this.name = "k-subset";
        const k = params.k;
        if (!Number.isInteger(k) || k < 1 || k > this.d - 1)
            throw new RangeError(`k must be an integer in [1, d-1] = [1, ${this.d - 1}]`);
        this.k = k;
        const L = expLowerBound(this.epsilon);
        const K = BigInt(k);
        const T = floorThreshold({ num: K * L.num, den: K * L.num + BigInt(this.d - k) * L.den });
        if (T <= 0n || T >= TWO64)
            throw new RangeError("epsilon is out of the usable range: the probabilities round to 0 or 1 in 64-bit thresholds");
        // p* > q* and the exact ratio g/(1 − g)·(d − k)/k <= L
        if (!leq({ num: T * BigInt(this.d - k), den: (TWO64 - T) * K }, L))
            throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
        if (T * BigInt(this.d) <= K * TWO64)
            throw new RangeError("epsilon is too small: 64-bit thresholds cannot separate p* from q*");
        this.includeThreshold = T;
        this.include = new Bernoulli(T);
        const N = this.d - 1;
        this.c = Math.max(1, Math.floor(60 / N.toString(2).length));
        this.groups = Math.ceil(k / this.c);
        this.P = [[], []];
        this.thr = [[], []];
        for (let a = 0; a < 2; a++) {
            const s = k - a;
            for (let g = 0; g < this.groups; g++) {
                let P = 1n;
                for (let j = g * this.c; j < Math.min(k, g * this.c + this.c); j++)
                    P *= j < s ? BigInt(N - s + j + 1) : 1n;
                this.P[a].push(P);
                this.thr[a].push((1n << 64n) % P);
            }
        }
    }
    /** Verification only (an enumerating source): the other items as one uniform choice among the
     * C(d − 1, s) subsets of the d − 1 others (what Floyd's algorithm realizes exactly), unranked in
     * lexicographic order. */
    enumerated(code, inc, src) {
        const N = this.d - 1, s = this.k - inc;
        const binom = (n, r) => {
            let v = 1;
            for (let i = 0; i < r; i++)
                v = (v * (n - i)) / (i + 1);
            return Math.round(v);
        };
        let rank = src.choose("uniform", BigInt(binom(N, s)), binom(N, s));
        const picks = [];
        let next = 0;
        for (let left = s; left > 0; left--) {
            for (;;) {
                const c = binom(N - next - 1, left - 1);
                if (rank < c)
                    break;
                rank -= c;
                next++;
            }
            picks.push(next++);
        }
        const items = picks.map((v) => (v >= code ? v + 1 : v));
        if (inc)
            items.push(code);
        return items.sort((x, y) => x - y);
    }
    specParams() {
        return { ...super.specParams(), k: this.k };
    }
    reportFields() {
        return [{ name: "report", dtype: "uint32", width: this.k, kind: "sorted", bound: this.d }];
    }
    randomizeCode(code, src) {
        const inc = this.include.draw(src) ? 1 : 0;
        if (src.choose)
            return { report: this.enumerated(code, inc, src) };
        const G = this.groups;
        const P = this.P[inc], thr = this.thr[inc];
        const raw = src.randomBytes(8 * G);
        const words = [];
        for (let g = 0; g < G; g++)
            words.push(wordLE(raw.subarray(8 * g, 8 * g + 8)));
        let rej = [];
        for (let g = 0; g < G; g++)
            if (((words[g] * P[g]) & M64) < thr[g])
                rej.push(g);
        while (rej.length) {
            const fresh = src.randomBytes(8 * rej.length);
            const next = [];
            rej.forEach((g, i) => {
                words[g] = wordLE(fresh.subarray(8 * i, 8 * i + 8));
                if (((words[g] * P[g]) & M64) < thr[g])
                    next.push(g);
            });
            rej = next;
        }
        // Floyd's algorithm: s draws, step j uniform on [0, N − s + j]; a taken pick becomes N − s + j
        const N = this.d - 1, k = this.k, s = k - inc;
        const picks = [];
        let acc = 0n;
        for (let j = 0; j < s; j++) {
            if (j % this.c === 0)
                acc = words[j / this.c];
            const prod = acc * BigInt(N - s + j + 1);
            let t = Number(prod >> 64n);
            acc = prod & M64;
            if (picks.includes(t))
                t = N - s + j;
            picks.push(t);
        }
        const items = picks.map((v) => (v >= code ? v + 1 : v));
        if (inc)
            items.push(code);
        items.sort((x, y) => x - y);
        return { report: items };
    }
}
