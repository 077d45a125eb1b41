import type { RandomSource } from "./source.js";
/**
 * An event of probability exactly T/2**64 (`RandomSource.bernoulli`, one draw): the high nibble of
 * one random byte is compared with T's top nibble; a tie compares T's remaining 60 bits, times 16,
 * byte by byte (most significant first; only ties read the next byte).
 */
export declare class Bernoulli {
    readonly threshold: bigint;
    private readonly t0;
    private readonly rest;
    private readonly restZero;
    constructor(threshold: bigint);
    draw(src: RandomSource): boolean;
}
/**
 * An integer exactly uniform on [0, r) (1 <= r <= 2**32; `RandomSource.uniform_int`, one draw):
 * Lemire's method on a 16-bit word (r <= 2**10) or a 32-bit word (little-endian), a draw rejected
 * when its low half falls below 2**bits mod r and redrawn.
 */
export declare function uniformInt(src: RandomSource, r: number): number;
declare function isqrt(n: number): number;
/**
 * One row of `nBits` independent events of probability T/2**64, packed LSB first
 * (`RandomSource.bernoulli_packed` for one row): the sparse sampler when it is cheaper, else
 * geometric-run decoding (an event is bit g of T, g the zeros before the next 1 in a stream of
 * fair bits read LSB first).
 */
export declare class PackedRow {
    readonly threshold: bigint;
    readonly nBits: number;
    private readonly mode;
    private readonly tb;
    private readonly sparse;
    private readonly first;
    constructor(threshold: bigint, nBits: number);
    /** A fresh packed row (ceil(nBits/8) bytes; padding bits 0). */
    draw(src: RandomSource): Uint8Array;
}
/**
 * Packed row whose bits at `positions` are 1 with probability p/2**64 and every other bit with
 * q/2**64 (`RandomSource.bernoulli_rows` for one row): the own events are drawn first, one
 * Bernoulli per position in order, then the whole row with q, then each listed bit is overwritten.
 */
export declare function bernoulliRow(src: RandomSource, row: PackedRow, positions: ArrayLike<number>, own: Bernoulli): Uint8Array;
export { isqrt };
