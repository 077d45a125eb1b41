import type { PyJSON } from "../pyjson.js";
import { type RandomSource } from "../source.js";
import { type Report, type ReportField } from "../wire.js";
import type { ClientMechanism, Label } from "./base.js";
export declare const PAD = "\0ldp-plugin:pad\0";
type Inner = ClientMechanism & {
    randomizeItem?: (item: bigint, src: RandomSource) => Report;
};
export declare class SampleOne {
    readonly mechanism: Inner;
    readonly m: number;
    readonly onLong: "error" | "sample";
    readonly name = "sample-one";
    readonly padded: Inner;
    private _fingerprint;
    constructor(mechanism: Inner, m: number, onLong: "error" | "sample", makePadded: (padded: {
        d?: number;
        categories?: Label[];
    }) => Inner);
    get epsilon(): number;
    spec(): PyJSON;
    get fingerprint(): Uint8Array;
    reportFields(): ReportField[];
    /** One user's report of the set `items` (a single item is a set of one). */
    randomize(items: Label | Label[], src?: RandomSource): Report;
    randomizeCode(code: number, src: RandomSource): Report;
    toWire(report: Report, tag?: Uint8Array): Uint8Array;
}
export {};
