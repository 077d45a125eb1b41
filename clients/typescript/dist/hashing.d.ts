export declare function mix64(z: bigint): bigint;
/** The 64-bit key of an integer item (signed 64-bit, two's complement). */
export declare function intItemKey(i: number | bigint): bigint;
/** h_s(key) in [0, k) for a 64-bit seed s (1 <= k <= 2**32). */
export declare function seededHash(key: bigint, seed: bigint, k: number): number;
/** A little-endian unsigned 64-bit word from 8 bytes. */
export declare function wordLE(b: Uint8Array): bigint;
/** The 64-bit key of an item: an integer's `intItemKey`, a string's 8-byte BLAKE2b digest
 * (person "ldp-plugin-item", UTF-8, read little-endian). */
export declare function itemKey(item: string | number | bigint): bigint;
/** The hash seeds of `n` cohorts (`cohort_seeds`): mix64(hash_seed + i · golden), i = 1..n. */
export declare function cohortSeeds(hashSeed: bigint, n: number): bigint[];
/** Rank of each key under the seeded hash z (ties by position): `seeded_permutation`. */
export declare function seededPermutation(keys: bigint[], seed: bigint): number[];
