/** SHAKE-256 (FIPS 202) over BigInt lanes, for the memoized mechanisms' keyed PRF
 * (the Python client's `_prf`: SHAKE-256(len(key) ‖ key ‖ fingerprint ‖ tag ‖ unit)). */
const M = (1n << 64n) - 1n;
// the round constants from their LFSR (FIPS 202 §3.2.5, rc(t)), computed rather than listed
const RC: bigint[] = [];
for (let r = 0, R = 1; r < 24; r++) {
  let c = 0n;
  for (let j = 0; j < 7; j++) {
    if (R & 1) c |= 1n << BigInt((1 << j) - 1);
    R = R & 0x80 ? ((R << 1) ^ 0x71) & 0xff : (R << 1) & 0xff;
  }
  RC.push(c);
}
const ROT = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14];
const rotl = (x: bigint, n: number): bigint => (n === 0 ? x : ((x << BigInt(n)) | (x >> BigInt(64 - n))) & M);

function keccakF(a: bigint[]): void {
  for (let round = 0; round < 24; round++) {
    const c = [0, 1, 2, 3, 4].map((x) => a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20]);
    for (let x = 0; x < 5; x++) {
      const d = c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
      for (let y = 0; y < 25; y += 5) a[x + y] ^= d;
    }
    const b = new Array<bigint>(25);
    for (let x = 0; x < 5; x++) for (let y = 0; y < 5; y++) b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl(a[x + 5 * y], ROT[x + 5 * y]);
    for (let x = 0; x < 5; x++) for (let y = 0; y < 25; y += 5) a[x + y] = b[x + y] ^ (~b[((x + 1) % 5) + y] & M & b[((x + 2) % 5) + y]);
    a[0] ^= RC[round];
  }
}

export function shake256(data: Uint8Array, outLen: number): Uint8Array {
  const rate = 136;
  const padded = new Uint8Array(Math.ceil((data.length + 1) / rate) * rate);
  padded.set(data);
  padded[data.length] ^= 0x1f;
  padded[padded.length - 1] ^= 0x80;
  const a = new Array<bigint>(25).fill(0n);
  for (let off = 0; off < padded.length; off += rate) {
    for (let i = 0; i < rate / 8; i++) {
      let lane = 0n;
      for (let j = 7; j >= 0; j--) lane = (lane << 8n) | BigInt(padded[off + 8 * i + j]);
      a[i] ^= lane;
    }
    keccakF(a);
  }
  const out = new Uint8Array(outLen);
  for (let pos = 0; ; ) {
    for (let i = 0; i < rate / 8 && pos < outLen; i++) for (let j = 0; j < 8 && pos < outLen; j++) out[pos++] = Number((a[i] >> BigInt(8 * j)) & 0xffn);
    if (pos >= outLen) return out;
    keccakF(a);
  }
}
