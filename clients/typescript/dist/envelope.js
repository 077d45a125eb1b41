/**
 * What a device posts: an envelope = a fresh 16-byte CSPRNG nonce + one one-report wire blob
 * (the Python collector's `ldp_plugin/federated/envelope.py`); the collector refuses a nonce it
 * has seen (a replay) before it decodes anything.
 */
export const NONCE_BYTES = 16;
export function seal(wire) {
    const out = new Uint8Array(NONCE_BYTES + wire.length);
    globalThis.crypto.getRandomValues(out.subarray(0, NONCE_BYTES));
    out.set(wire, NONCE_BYTES);
    return out;
}
