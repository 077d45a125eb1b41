/** SHA-256 (FIPS 180-4), synchronous and dependency-free: the wire fingerprint is its first 16 bytes. */
export declare function sha256(data: Uint8Array): Uint8Array;
