export declare function shake256(data: Uint8Array, outLen: number): Uint8Array;
