export declare function blake2b(data: Uint8Array, outLen: number, person?: Uint8Array): Uint8Array;
