import { KRR, WarnerRR } from "./mechanisms/krr.js";
import { OUE, RAPPOR } from "./mechanisms/unary.js";
import { OLH } from "./mechanisms/olh.js";
import { HadamardMechanism, HadamardResponse } from "./mechanisms/hadamard.js";
import { KSubset } from "./mechanisms/subset.js";
import { CMS, HCMS, ORAPPOR, ORR } from "./mechanisms/cohort.js";
import { Duchi, Hybrid, Piecewise, SquareWave } from "./mechanisms/numeric.js";
import { SampleOne } from "./mechanisms/sample_one.js";
import { LOLOHA } from "./mechanisms/loloha.js";
const FACTORIES = {
    krr: (p) => new KRR(p),
    warner: (p) => new WarnerRR(p),
    rappor: (p) => new RAPPOR(p),
    oue: (p) => new OUE(p),
    olh: (p) => new OLH(p),
    hadamard: (p) => new HadamardResponse(p),
    "hadamard-mechanism": (p) => new HadamardMechanism(p),
    "k-subset": (p) => new KSubset(p),
    orr: (p) => new ORR(p),
    orappor: (p) => new ORAPPOR(p),
    cms: (p) => new CMS(p),
    hcms: (p) => new HCMS(p),
    duchi: (p) => new Duchi(p),
    piecewise: (p) => new Piecewise(p),
    hybrid: (p) => new Hybrid(p),
    "square-wave": (p) => new SquareWave(p),
    loloha: (p) => new LOLOHA(p),
};
/** The mechanisms this client implements. */
export const CLIENT_MECHANISMS = Object.keys(FACTORIES);
export function mechanismFromSpec(spec) {
    if (spec.set !== undefined) {
        if (spec.set !== "sample-one" || spec.mechanism === undefined || spec.mechanism.set !== undefined)
            throw new RangeError("set wrapper must be sample-one over a mechanism");
        const inner = spec.mechanism;
        const innerMech = mechanismFromSpec(inner);
        const make = FACTORIES[inner.name];
        // the wrapper answers the same calls as a mechanism (randomize, toWire, reportFields, spec)
        return new SampleOne(innerMech, spec.m, (spec.on_long ?? "error"), (pad) => make({ ...(inner.params ?? {}), ...pad, ...(pad.categories ? { d: null } : {}) }));
    }
    const make = FACTORIES[spec.name];
    if (make === undefined || spec.params == null)
        throw new RangeError(`mechanism must be one of ${CLIENT_MECHANISMS.join(", ")}`);
    return make(spec.params);
}
