/**
 * Exact samplers on uniform bytes, each the Python client's sampler for a batch of one
 * (ldp_plugin/sampling/source.py): the same bytes, the same decision.
 */
import { TWO64 } from "./exact.js";
import { sparseTables, useSparse, SparseRow } from "./sparse.js";
/**
 * An event of probability exactly T/2**64 (`RandomSource.bernoulli`, one draw): the high nibble of
 * one random byte is compared with T's top nibble; a tie compares T's remaining 60 bits, times 16,
 * byte by byte (most significant first; only ties read the next byte).
 */
export class Bernoulli {
    constructor(threshold) {
        if (threshold < 0n || threshold > TWO64)
            throw new RangeError("threshold must be in [0, 2**64]");
        this.threshold = threshold;
        this.t0 = Number(threshold >> 60n);
        const rest = (threshold & ((1n << 60n) - 1n)) << 4n;
        this.restZero = rest === 0n;
        this.rest = new Uint8Array(8);
        for (let i = 0; i < 8; i++)
            this.rest[i] = Number((rest >> BigInt(8 * (7 - i))) & 0xffn);
    }
    draw(src) {
        if (src.choose)
            return src.choose("bernoulli", this.threshold, 2) === 0;
        if (this.threshold === 0n)
            return false;
        if (this.threshold === TWO64)
            return true;
        const nib = src.randomBytes(1)[0] >> 4;
        if (nib !== this.t0)
            return nib < this.t0;
        if (this.restZero)
            return false;
        for (let level = 0; level < 8; level++) {
            const b = src.randomBytes(1)[0];
            if (b !== this.rest[level])
                return b < this.rest[level];
        }
        return false; // W == threshold: not below it
    }
}
/**
 * An integer exactly uniform on [0, r) (1 <= r <= 2**32; `RandomSource.uniform_int`, one draw):
 * Lemire's method on a 16-bit word (r <= 2**10) or a 32-bit word (little-endian), a draw rejected
 * when its low half falls below 2**bits mod r and redrawn.
 */
export function uniformInt(src, r) {
    if (!Number.isInteger(r) || r < 1 || r > 2 ** 32)
        throw new RangeError("range r must be in [1, 2**32]");
    if (src.choose)
        return src.choose("uniform", BigInt(r), r);
    if (r === 1)
        return 0;
    if (r <= 1024) {
        const rejectBelow = 65536 % r;
        for (;;) {
            const b = src.randomBytes(2);
            const m = (b[0] | (b[1] << 8)) * r;
            if ((m & 0xffff) >= rejectBelow)
                return m >>> 16;
        }
    }
    const R = BigInt(r);
    const rejectBelow = Number((1n << 32n) % R);
    for (;;) {
        const b = src.randomBytes(4);
        const x = (b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)) >>> 0;
        const m = BigInt(x) * R;
        if (Number(m & 0xffffffffn) >= rejectBelow)
            return Number(m >> 32n);
    }
}
/** Random bytes drawn by the dense decoder for `n` events (`bernoulli._block_bytes`). */
function blockBytes(nEvents) {
    const bits = 2 * nEvents + 12 * isqrt(2 * nEvents + 1) + 128;
    return 8 * Math.floor((bits + 63) / 64);
}
function isqrt(n) {
    let x = Math.floor(Math.sqrt(n));
    while (x * x > n)
        x--;
    while ((x + 1) * (x + 1) <= n)
        x++;
    return x;
}
/** The decoder's event bits: `tb[g]` is bit g of T from the top (0 for g >= 64). */
function thresholdBits(T) {
    const tb = new Uint8Array(65);
    for (let g = 0; g < 64; g++)
        tb[g] = Number((T >> BigInt(63 - g)) & 1n);
    return tb;
}
const TOPUP_BYTES = 4096;
/**
 * One row of `nBits` independent events of probability T/2**64, packed LSB first
 * (`RandomSource.bernoulli_packed` for one row): the sparse sampler when it is cheaper, else
 * geometric-run decoding (an event is bit g of T, g the zeros before the next 1 in a stream of
 * fair bits read LSB first).
 */
export class PackedRow {
    constructor(threshold, nBits) {
        this.tb = new Uint8Array(0);
        this.sparse = null;
        this.first = 0;
        if (threshold < 0n || threshold > TWO64)
            throw new RangeError("threshold must be in [0, 2**64]");
        this.threshold = threshold;
        this.nBits = nBits;
        if (threshold === 0n || threshold === TWO64 || nBits === 0) {
            this.mode = "fill";
            return;
        }
        const rare = threshold < TWO64 - threshold ? threshold : TWO64 - threshold;
        if (useSparse(rare)) {
            this.mode = "sparse";
            this.sparse = new SparseRow(sparseTables(rare), nBits, rare !== threshold);
        }
        else {
            this.mode = "dense";
            this.tb = thresholdBits(threshold);
            this.first = blockBytes(nBits);
        }
    }
    /** A fresh packed row (ceil(nBits/8) bytes; padding bits 0). */
    draw(src) {
        const nb = (this.nBits + 7) >> 3;
        const out = new Uint8Array(nb);
        if (src.choose) {
            for (let j = 0; j < this.nBits; j++)
                if (src.choose("bernoulli", this.threshold, 2) === 0)
                    out[j >> 3] |= 1 << (j & 7);
            return out;
        }
        if (this.mode === "fill") {
            if (this.threshold !== 0n && this.nBits > 0) {
                out.fill(0xff);
                if (this.nBits % 8)
                    out[nb - 1] &= (1 << (this.nBits % 8)) - 1;
            }
            return out;
        }
        if (this.mode === "sparse") {
            this.sparse.fill(src, out);
            return out;
        }
        const need = this.nBits;
        const tb = this.tb;
        let have = 0;
        let s = 0;
        let block = src.randomBytes(this.first);
        for (;;) {
            for (let i = 0; i < block.length && have < need; i++) {
                const v = block[i];
                for (let k = 0; k < 8; k++) {
                    if ((v >> k) & 1) {
                        if (have < need) {
                            if (tb[s])
                                out[have >> 3] |= 1 << (have & 7);
                            have++;
                        }
                        s = 0;
                    }
                    else if (s < 64) {
                        s++;
                    }
                }
            }
            if (have >= need)
                return out;
            block = src.randomBytes(TOPUP_BYTES);
        }
    }
}
/**
 * Packed row whose bits at `positions` are 1 with probability p/2**64 and every other bit with
 * q/2**64 (`RandomSource.bernoulli_rows` for one row): the own events are drawn first, one
 * Bernoulli per position in order, then the whole row with q, then each listed bit is overwritten.
 */
export function bernoulliRow(src, row, positions, own) {
    const bits = [];
    for (let t = 0; t < positions.length; t++)
        bits.push(own.draw(src));
    const out = row.draw(src);
    for (let t = 0; t < positions.length; t++) {
        const c = positions[t];
        if (bits[t])
            out[c >> 3] |= 1 << (c & 7);
        else
            out[c >> 3] &= ~(1 << (c & 7));
    }
    return out;
}
export { isqrt };
