/**
 * The Python client's specified hash family (ldp_plugin/hashing.py), in BigInt: splitmix64's
 * finalizer `mix64`, integer item keys `mix64(i XOR "ldp-int ")`, and the seeded
 * multiply-add-shift hash into [0, k) with Lemire's range reduction.
 */
import { blake2b } from "./blake2b.js";

const M64 = (1n << 64n) - 1n;
const C1 = 0xbf58476d1ce4e5b9n;
const C2 = 0x94d049bb133111ebn;
const INT_TAG = 0x6c64702d696e7420n;
const A_TAG = 0x5d588b656c078965n;
const B_TAG = 0x269ec3a2c5a1c3b1n;

export function mix64(z: bigint): bigint {
  z &= M64;
  z ^= z >> 30n;
  z = (z * C1) & M64;
  z ^= z >> 27n;
  z = (z * C2) & M64;
  z ^= z >> 31n;
  return z;
}

/** The 64-bit key of an integer item (signed 64-bit, two's complement). */
export function intItemKey(i: number | bigint): bigint {
  const v = BigInt(i);
  if (v < -(1n << 63n) || v >= 1n << 63n) throw new RangeError("integer items must fit in a signed 64-bit integer");
  return mix64((v & M64) ^ INT_TAG);
}

/** h_s(key) in [0, k) for a 64-bit seed s (1 <= k <= 2**32). */
export function seededHash(key: bigint, seed: bigint, k: number): number {
  const a = mix64(seed ^ A_TAG) | 1n;
  const b = mix64(seed ^ B_TAG);
  const z = (a * key + b) & M64;
  return Number(((z >> 32n) * BigInt(k)) >> 32n);
}

/** A little-endian unsigned 64-bit word from 8 bytes. */
export function wordLE(b: Uint8Array): bigint {
  let w = 0n;
  for (let i = 7; i >= 0; i--) w = (w << 8n) | BigInt(b[i]);
  return w;
}

const ITEM_PERSON = new TextEncoder().encode("ldp-plugin-item");
const GOLDEN = 0x9e3779b97f4a7c15n;

/** The 64-bit key of an item: an integer's `intItemKey`, a string's 8-byte BLAKE2b digest
 * (person "ldp-plugin-item", UTF-8, read little-endian). */
export function itemKey(item: string | number | bigint): bigint {
  if (typeof item === "string") return wordLE(blake2b(new TextEncoder().encode(item), 8, ITEM_PERSON));
  if (typeof item === "number" && !Number.isInteger(item)) throw new RangeError("items must be integers or strings");
  return intItemKey(item);
}

/** The hash seeds of `n` cohorts (`cohort_seeds`): mix64(hash_seed + i · golden), i = 1..n. */
export function cohortSeeds(hashSeed: bigint, n: number): bigint[] {
  const out: bigint[] = [];
  for (let i = 1; i <= n; i++) out.push(mix64((hashSeed + BigInt(i) * GOLDEN) & M64));
  return out;
}

/** Rank of each key under the seeded hash z (ties by position): `seeded_permutation`. */
export function seededPermutation(keys: bigint[], seed: bigint): number[] {
  const a = mix64(seed ^ A_TAG) | 1n;
  const b = mix64(seed ^ B_TAG);
  const z = keys.map((k) => (a * k + b) & M64);
  const order = keys.map((_, i) => i).sort((i, j) => (z[i] < z[j] ? -1 : z[i] > z[j] ? 1 : i - j));
  const rank = new Array<number>(keys.length);
  order.forEach((i, r) => (rank[i] = r));
  return rank;
}
