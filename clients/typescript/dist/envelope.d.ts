/**
 * What a device posts: an envelope = a fresh 16-byte CSPRNG nonce + one one-report wire blob
 * (the Python collector's `ldp_plugin/federated/envelope.py`); the collector refuses a nonce it
 * has seen (a replay) before it decodes anything.
 */
export declare const NONCE_BYTES = 16;
export declare function seal(wire: Uint8Array): Uint8Array;
