/**
 * Random sources. Every sampler draws uniform random *bytes* from a source, in the same order and
 * amounts as the Python client's `RandomSource` (ldp_plugin/sampling/source.py), so the same bytes
 * give the same report in both clients.
 *
 * - {@link SecureSource} (the default): `crypto.getRandomValues`, the platform CSPRNG.
 * - {@link ReplaySource}: a recorded byte stream (tests and cross-language vectors only; not
 *   secure), failing loudly when it runs out.
 */
const POOL = 65536; // getRandomValues fills at most 65,536 bytes per call
export class SecureSource {
    constructor() {
        this.secure = true;
        this.buf = new Uint8Array(POOL);
        this.pos = POOL;
    }
    randomBytes(n) {
        if (n > POOL) {
            const out = new Uint8Array(n);
            for (let i = 0; i < n; i += POOL)
                globalThis.crypto.getRandomValues(out.subarray(i, Math.min(n, i + POOL)));
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
export class ReplaySource {
    constructor(bytes) {
        this.bytes = bytes;
        this.secure = false;
        this.pos = 0;
    }
    randomBytes(n) {
        if (this.pos + n > this.bytes.length)
            throw new RangeError("the replayed random stream ran out");
        const out = this.bytes.subarray(this.pos, this.pos + n);
        this.pos += n;
        return out;
    }
    /** Bytes consumed so far. */
    get consumed() {
        return this.pos;
    }
}
let defaultSource = null;
/** The shared CSPRNG source (created on first use). */
export function secureSource() {
    if (defaultSource === null)
        defaultSource = new SecureSource();
    return defaultSource;
}
