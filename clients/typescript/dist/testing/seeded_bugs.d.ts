import { KRR } from "../mechanisms/krr.js";
import { OUE } from "../mechanisms/unary.js";
import type { RandomSource } from "../source.js";
import type { Report } from "../wire.js";
import type { ClientMechanism } from "../mechanisms/base.js";
/** k-RR keeping the true item with the complement of its threshold (p and q swapped). */
export declare class KRRSwappedThreshold extends KRR {
    private readonly swapped;
    randomizeCode(code: number, src: RandomSource): Report;
}
/** k-RR that forgets to skip the true item when it lies (the last item is never reported). */
export declare class KRRNoSkip extends KRR {
    randomizeCode(code: number, src: RandomSource): Report;
}
/** OUE whose own bit is drawn with q (a threshold from the wrong place). */
export declare class OUEOwnBitWithQ extends OUE {
    private readonly wrongOwn;
    private readonly rowQ;
    randomizeCode(code: number, src: RandomSource): Report;
}
export declare const SEEDED_BUGS: Record<string, (spec: {
    params: Record<string, unknown>;
}) => ClientMechanism>;
