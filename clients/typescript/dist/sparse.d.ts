/**
 * The sparse Bernoulli sampler of the Python client (ldp_plugin/sampling/sparse.py) for one row:
 * the positions of the rare outcome as exact geometric skips, decided by comparing a lazily read
 * uniform U with the dyadic cutoffs c_g = (1 − T/2**64)**g — the same tables, the same byte
 * regions, the same draws, so the same bytes give the same row.
 */
import type { RandomSource } from "./source.js";
export interface SparseTables {
    T: bigint;
    M: number;
    s1: number;
    L: bigint[];
    frac: Uint8Array;
    table1: Int32Array;
    table2: Int32Array;
    bitsPerDraw: number;
    eventsPerDraw: number;
    pStage2: number;
    pStage3: number;
}
/** The cheaper (in expected random bits) of the 1- and 2-byte first stages for T (0 < T < 2**64). */
export declare function sparseTables(T: bigint): SparseTables;
/** Whether the sparse sampler is cheaper than dense run decoding (T <= 2**63). */
export declare function useSparse(T: bigint): boolean;
/** One row of the sparse sampler (one segment of `need = nBits` events). */
export declare class SparseRow {
    readonly tb: SparseTables;
    readonly nBits: number;
    readonly flip: boolean;
    private readonly sizes;
    private readonly topup;
    constructor(tb: SparseTables, nBits: number, flip: boolean);
    /** Write the row's events into `out` (zeroed, ceil(nBits/8) bytes). */
    fill(src: RandomSource, out: Uint8Array): void;
}
