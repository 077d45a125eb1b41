/** What every client mechanism provides: its spec (the Python client's `spec()`), its report
 * fields and wire fingerprint, its exact thresholds, and a randomizer for one user. */
import { type PyJSON } from "../pyjson.js";
import type { RandomSource } from "../source.js";
import { type Report, type ReportField } from "../wire.js";
export type Label = string | number | boolean;
/** ε must be a finite positive number (the Python client's `check_epsilon`). */
export declare function checkEpsilon(epsilon: number): number;
/** The domain: `d` codes, or `categories` labels (d = their number). */
export declare function checkDomain(d: number | null | undefined, categories: readonly Label[] | null | undefined): [number, Label[] | null];
export declare abstract class ClientMechanism {
    abstract readonly name: string;
    readonly epsilon: number;
    readonly d: number;
    readonly categories: Label[] | null;
    private _fingerprint;
    private _index;
    constructor(params: {
        epsilon: number;
        d?: number | null;
        categories?: readonly Label[] | null;
    }, openDomain?: boolean);
    /** The spec's parameters (JSON, Python's key names and number kinds). */
    protected specParams(): Record<string, PyJSON>;
    /** The Python client's `mechanism.spec()`. */
    spec(): PyJSON;
    abstract reportFields(): ReportField[];
    get fingerprint(): Uint8Array;
    /** A value → its code in [0, d) (errors never echo the value). */
    encode(value: Label): number;
    /** Whether the domain is closed (d items); an open-domain mechanism encodes items to 64-bit keys. */
    get closed(): boolean;
    /** One user's report from a validated code. */
    abstract randomizeCode(code: number, src: RandomSource): Report;
    /** One user's report (default randomness: the platform CSPRNG). */
    randomize(value: Label, src?: RandomSource): Report;
    /** The wire blob of one report (a batch of one), bound to a query by `tag`. */
    toWire(report: Report, tag?: Uint8Array): Uint8Array;
    /** Many users' reports as one wire batch. */
    toWireBatch(reports: readonly Report[], tag?: Uint8Array): Uint8Array;
}
