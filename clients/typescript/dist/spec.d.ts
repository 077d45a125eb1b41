/** A client mechanism from its spec JSON (as the Python client's `mechanism.spec()` / a query). */
import type { ClientMechanism } from "./mechanisms/base.js";
type Spec = {
    name?: string;
    params?: Record<string, unknown>;
    set?: string;
    m?: number;
    on_long?: string;
    mechanism?: Spec;
};
/** The mechanisms this client implements. */
export declare const CLIENT_MECHANISMS: readonly string[];
export declare function mechanismFromSpec(spec: Spec): ClientMechanism;
export {};
