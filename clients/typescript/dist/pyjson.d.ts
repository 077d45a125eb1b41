/**
 * Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))` (ensure_ascii on), so a
 * mechanism's spec hashes to the same wire fingerprint in both clients. Numbers marked as floats
 * print as Python's `repr(float)` ("1.0", "1e-05", "1e+16").
 */
/** A number Python holds as a float (JSON "1.0", not "1"). */
export declare class PyFloat {
    readonly value: number;
    constructor(value: number);
}
export type PyJSON = null | boolean | number | bigint | string | PyFloat | PyJSON[] | {
    [k: string]: PyJSON;
};
export declare function pyFloatRepr(x: number): string;
export declare function pyDumps(v: PyJSON): string;
/**
 * Python's `json.loads`, keeping which numbers are floats (a fraction or an exponent in the text)
 * so that `pyDumps(pyLoads(text))` is Python's canonical dump of the same document — what a query's
 * content hash is computed over.
 */
export declare function pyLoads(text: string): PyJSON;
/** A PyJSON value as plain JSON values (floats as numbers). */
export declare function plain(v: PyJSON): unknown;
