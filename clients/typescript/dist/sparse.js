const M_CAP = 1 << 12;
const TAIL_BITS = 6;
const MAX_BITS_PER_EVENT = 1.5;
const TOPUP_DRAWS = 4096;
const MASK64 = (1n << 64n) - 1n;
function cutoffs(T) {
    const a = (1n << 64n) - T;
    let lo = 1n << 128n;
    let hi = 1n << 128n;
    const tail = 1n << BigInt(128 - TAIL_BITS);
    const L = [];
    const frac = [];
    let g = 0;
    while (g < M_CAP) {
        g++;
        lo = (lo * a) >> 64n;
        hi = -((-hi * a) >> 64n);
        if (lo >> 64n === hi >> 64n && (lo & MASK64) !== 0n) {
            L.push(lo >> 64n);
            frac.push(1);
        }
        else {
            const num = a ** BigInt(g);
            const sh = BigInt(64 * (g - 1));
            L.push(num >> sh);
            frac.push((num & ((1n << sh) - 1n)) !== 0n ? 1 : 0);
        }
        if (hi < tail)
            break;
    }
    return { M: g, L, frac: Uint8Array.from(frac) };
}
/** Number of entries of the ascending array `a` below `x` (side "left") or at most `x` ("right"). */
function searchsorted(a, x, right) {
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (right ? a[mid] <= x : a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
function code(P, k, Lasc, M, exactL) {
    const sh = BigInt(64 - k);
    const lower = P << sh;
    const top = P === (1n << BigInt(k)) - 1n;
    const ge = top ? 0 : M - searchsorted(Lasc, (P + 1n) << sh, false);
    let le = searchsorted(Lasc, lower, false);
    if (exactL.length)
        le += searchsorted(exactL, lower, true) - searchsorted(exactL, lower, false);
    return ge + le === M ? ge : -1;
}
function step(c, M) {
    return c < 0 ? -1 : c >= M ? 2 * M : 2 * c + 1;
}
function build(T, s1, M, L, frac) {
    const Lasc = L.slice().reverse();
    const exactL = L.filter((_, i) => frac[i] === 0).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const k1 = 8 * s1;
    const n1 = 1 << k1;
    const table1 = new Int32Array(n1);
    const amb = [];
    for (let p = 0; p < n1; p++) {
        const c = code(BigInt(p), k1, Lasc, M, exactL);
        if (c < 0) {
            amb.push(p);
            table1[p] = -amb.length;
        }
        else
            table1[p] = step(c, M);
    }
    const table2 = new Int32Array(amb.length * 256);
    let undecided = 0;
    for (let j = 0; j < amb.length; j++) {
        for (let b = 0; b < 256; b++) {
            const v = step(code((BigInt(amb[j]) << 8n) | BigInt(b), k1 + 8, Lasc, M, exactL), M);
            table2[j * 256 + b] = v;
            if (v < 0)
                undecided++;
        }
    }
    const p2 = amb.length / 2 ** k1;
    const p3 = undecided / 2 ** (k1 + 8);
    const q = Number(T) / 2 ** 64;
    const cM = Number(L[L.length - 1]) / 2 ** 64;
    const events = (1.0 - cM) / q;
    const bits = 8.0 * (s1 + p2 + (7 - s1) * p3);
    return { T, M, s1, L, frac, table1, table2, bitsPerDraw: bits, eventsPerDraw: events, pStage2: p2, pStage3: p3 };
}
const CACHE = new Map();
/** The cheaper (in expected random bits) of the 1- and 2-byte first stages for T (0 < T < 2**64). */
export function sparseTables(T) {
    const hit = CACHE.get(T);
    if (hit)
        return hit;
    if (T <= 0n || T >= 1n << 64n)
        throw new RangeError("threshold must be in (0, 2**64)");
    const { M, L, frac } = cutoffs(T);
    const one = build(T, 1, M, L, frac);
    let best = one;
    if (M >= 64) {
        const two = build(T, 2, M, L, frac);
        best = one.bitsPerDraw <= two.bitsPerDraw ? one : two;
    }
    CACHE.set(T, best);
    return best;
}
/** Whether the sparse sampler is cheaper than dense run decoding (T <= 2**63). */
export function useSparse(T) {
    if (!(T > 0n && T <= 1n << 63n) || T > (1n << 64n) / 5n)
        return false;
    const tb = sparseTables(T);
    return tb.bitsPerDraw / tb.eventsPerDraw <= MAX_BITS_PER_EVENT;
}
function layout(tb, draws) {
    const margin = (p) => {
        const m = draws * p;
        return Math.ceil(m + 12 * Math.sqrt(m + 1) + 4);
    };
    let r = Math.floor(Math.sqrt(draws + 1));
    while (r * r > draws + 1)
        r--;
    while ((r + 1) * (r + 1) <= draws + 1)
        r++;
    return [tb.s1 * (draws + 12 * r + 16), margin(tb.pStage2), (7 - tb.s1) * margin(tb.pStage3)];
}
/** Stage 4 (`sparse.resolve_tie`): U's first 64 bits equal a non-integral cutoff; read on. */
function resolveTie(tb, u64, src) {
    const Lasc = tb.L.slice().reverse();
    let count = tb.M - searchsorted(Lasc, u64, true);
    const a = (1n << 64n) - tb.T;
    let U = u64;
    let k = 1;
    let g = count + 1;
    while (g <= tb.M && tb.L[g - 1] === u64 && tb.frac[g - 1]) {
        const N = a ** BigInt(g);
        for (;;) {
            if ((U + 1n) << BigInt(64 * g) <= N << BigInt(64 * k)) {
                count++;
                break;
            }
            if (U << BigInt(64 * g) >= N << BigInt(64 * k))
                return count;
            const b = src.randomBytes(8);
            let w = 0n;
            for (let i = 0; i < 8; i++)
                w = (w << 8n) | BigInt(b[i]);
            U = (U << 64n) | w;
            k++;
        }
        g++;
    }
    return count;
}
/** One row of the sparse sampler (one segment of `need = nBits` events). */
export class SparseRow {
    constructor(tb, nBits, flip) {
        this.tb = tb;
        this.nBits = nBits;
        this.flip = flip;
        const draws = Math.floor(nBits / tb.eventsPerDraw) + 1;
        this.sizes = layout(tb, draws);
        this.topup = layout(tb, TOPUP_DRAWS);
    }
    /** Write the row's events into `out` (zeroed, ceil(nBits/8) bytes). */
    fill(src, out) {
        const tb = this.tb;
        const { s1, M } = tb;
        const len3 = 7 - s1;
        const need = this.nBits;
        let sizes = this.sizes;
        let block = src.randomBytes(sizes[0] + sizes[1] + sizes[2]);
        let n1 = sizes[0], n2 = sizes[1], n3 = sizes[2];
        let i1 = 0, i2 = 0, i3 = 0;
        let pos = 0;
        while (pos < need) {
            if (i1 + s1 > n1 || i2 >= n2 || i3 + len3 > n3) {
                sizes = this.topup;
                block = src.randomBytes(sizes[0] + sizes[1] + sizes[2]).slice();
                n1 = sizes[0];
                n2 = sizes[1];
                n3 = sizes[2];
                i1 = i2 = i3 = 0;
                continue;
            }
            const prefix = s1 === 1 ? block[i1] : (block[i1] << 8) | block[i1 + 1];
            i1 += s1;
            let c = tb.table1[prefix];
            let count;
            if (c >= 0) {
                count = c & 1 ? c >> 1 : M;
            }
            else {
                const b2 = block[n1 + i2];
                i2++;
                c = tb.table2[(-c - 1) * 256 + b2];
                if (c >= 0) {
                    count = c & 1 ? c >> 1 : M;
                }
                else {
                    let u = (BigInt(prefix) << 8n) | BigInt(b2);
                    for (let t = 0; t < len3; t++)
                        u = (u << 8n) | BigInt(block[n1 + n2 + i3 + t]);
                    i3 += len3;
                    let lo = 0, hi = M; // count of L_g > u (L descending)
                    while (lo < hi) {
                        const mid = (lo + hi) >> 1;
                        if (tb.L[mid] > u)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    count = lo;
                    const at = Math.min(count, M - 1);
                    if (count < M && tb.L[at] === u && tb.frac[at] === 1) {
                        block = block.slice(); // the tie draws from the source: keep this block's bytes
                        count = resolveTie(tb, u, src);
                    }
                }
            }
            if (count >= M) {
                pos += M;
            }
            else {
                const e = pos + count;
                if (e < need)
                    out[e >> 3] |= 1 << (e & 7);
                pos = e + 1;
            }
        }
        if (this.flip) {
            for (let i = 0; i < out.length; i++)
                out[i] = ~out[i] & 0xff;
            if (need % 8)
                out[out.length - 1] &= (1 << (need % 8)) - 1;
        }
    }
}
