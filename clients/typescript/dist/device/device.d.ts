import type { Label } from "../mechanisms/base.js";
import { DevicePolicy, type PolicyInit } from "./policy.js";
import type { LedgerStore } from "./store.js";
export declare const LEDGER_FORMAT = "ldp-device-ledger";
export declare class DeviceRefusal extends Error {
    readonly reason: string;
    constructor(reason: string);
}
export interface Answer {
    /** nonce + one wire report, to post to the collector; null when refused */
    envelope: Uint8Array | null;
    refused: string | null;
    /** true when this is the kept answer of a query already charged */
    retry: boolean;
}
export declare class Device {
    readonly policy: DevicePolicy;
    readonly store: LedgerStore;
    private readonly now;
    private constructor();
    /**
     * The device of its owner's policy over `store`. The first open creates the ledger with the
     * policy's caps; a later open with other caps is refused (`ledger_mismatch`): only the owner's
     * {@link Device.reset} starts a new budget.
     */
    static open(store: LedgerStore, policy: PolicyInit, options?: {
        now?: () => Date;
    }): Promise<Device>;
    /** The owner's reset: a new, empty ledger with `policy`'s caps (the old spends are dropped). */
    static reset(store: LedgerStore, policy: PolicyInit): Promise<void>;
    /** A new ledger: the owner's caps, no spend, and the device's secret key for memoized series
     * (32 bytes from the CSPRNG; it never leaves the device). */
    private static fresh;
    /** Remaining budget (exact text): the lifetime cap and, with a period, this period's. */
    remaining(): Promise<{
        lifetime: string;
        period: string | null;
    }>;
    /** Answer one query (its JSON as the server serves it) with this device's `value`. */
    respond(queryJson: string, value: Label | Label[]): Promise<Answer>;
}
