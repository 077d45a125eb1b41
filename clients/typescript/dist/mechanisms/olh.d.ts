import type { RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";
import { KRR } from "./krr.js";
import type { PyJSON } from "../pyjson.js";
/** OLH's default hash range round(e**ε + 1) (the Python client's `olh_default_g`). */
export declare function olhDefaultG(epsilon: number): number;
export declare class OLH extends ClientMechanism {
    readonly name: string;
    readonly g: number;
    readonly krr: KRR;
    private readonly keys;
    constructor(params: {
        epsilon: number;
        d?: number | null;
        categories?: readonly Label[] | null;
        g?: number | "auto" | null;
    });
    protected specParams(): Record<string, PyJSON>;
    reportFields(): ReportField[];
    randomizeCode(code: number, src: RandomSource): Report;
}
