/**
 * Random sources. Every sampler draws uniform random *bytes* from a source, in the same order and
 * amounts as the Python client's `RandomSource` (ldp_plugin/sampling/source.py), so the same bytes
 * give the same report in both clients.
 *
 * - {@link SecureSource} (the default): `crypto.getRandomValues`, the platform CSPRNG.
 * - {@link ReplaySource}: a recorded byte stream (tests and cross-language vectors only; not
 *   secure), failing loudly when it runs out.
 */

export interface RandomSource {
  /** `n` independent uniform bytes (the returned view may be reused by the next call). */
  randomBytes(n: number): Uint8Array;
  /** True for the CSPRNG; false for replayed/seeded streams (simulations and tests only). */
  readonly secure: boolean;
  /**
   * Verification only (an enumerating source): answers each sampler call — a Bernoulli of
   * threshold T (outcome 0: the event, 1: not), a uniform integer on [0, r) — with an outcome
   * index chosen by the verifier, which weighs it with the exact probability of that call.
   */
  choose?: (kind: "bernoulli" | "uniform", param: bigint, outcomes: number) => number;
}

const POOL = 65536; // getRandomValues fills at most 65,536 bytes per call

export class SecureSource implements RandomSource {
  readonly secure = true;
  private buf = new Uint8Array(POOL);
  private pos = POOL;

  randomBytes(n: number): Uint8Array {
    if (n > POOL) {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i += POOL) globalThis.crypto.getRandomValues(out.subarray(i, Math.min(n, i + POOL)));
      return out;
    }
    if (this.pos + n > POOL) {
      globalThis.crypto.getRandomValues(this.buf);
      this.pos = 0;
    }
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

export class ReplaySource implements RandomSource {
  readonly secure = false;
  private pos = 0;

  constructor(private readonly bytes: Uint8Array) {}

  randomBytes(n: number): Uint8Array {
    if (this.pos + n > this.bytes.length) throw new RangeError("the replayed random stream ran out");
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Bytes consumed so far. */
  get consumed(): number {
    return this.pos;
  }
}

let defaultSource: SecureSource | null = null;

/** The shared CSPRNG source (created on first use). */
export function secureSource(): SecureSource {
  if (defaultSource === null) defaultSource = new SecureSource();
  return defaultSource;
}
