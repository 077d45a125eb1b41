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
export declare class SecureSource implements RandomSource {
    readonly secure = true;
    private buf;
    private pos;
    randomBytes(n: number): Uint8Array;
}
export declare class ReplaySource implements RandomSource {
    private readonly bytes;
    readonly secure = false;
    private pos;
    constructor(bytes: Uint8Array);
    randomBytes(n: number): Uint8Array;
    /** Bytes consumed so far. */
    get consumed(): number;
}
/** The shared CSPRNG source (created on first use). */
export declare function secureSource(): SecureSource;
