/** A client mechanism from its spec JSON (as the Python client's `mechanism.spec()` / a query). */
import type { ClientMechanism } from "./mechanisms/base.js";
import { KRR, WarnerRR } from "./mechanisms/krr.js";
import { OUE, RAPPOR } from "./mechanisms/unary.js";
import { OLH } from "./mechanisms/olh.js";
import { HadamardMechanism, HadamardResponse } from "./mechanisms/hadamard.js";
import { KSubset } from "./mechanisms/subset.js";
import { CMS, HCMS, ORAPPOR, ORR } from "./mechanisms/cohort.js";
import { Duchi, Hybrid, Piecewise, SquareWave } from "./mechanisms/numeric.js";

import { SampleOne } from "./mechanisms/sample_one.js";
import { LOLOHA } from "./mechanisms/loloha.js";

type Spec = { name?: string; params?: Record<string, unknown>; set?: string; m?: number; on_long?: string; mechanism?: Spec };

const FACTORIES: Record<string, (p: Record<string, unknown>) => ClientMechanism> = {
  krr: (p) => new KRR(p as never),
  warner: (p) => new WarnerRR(p as never),
  rappor: (p) => new RAPPOR(p as never),
  oue: (p) => new OUE(p as never),
  olh: (p) => new OLH(p as never),
  hadamard: (p) => new HadamardResponse(p as never),
  "hadamard-mechanism": (p) => new HadamardMechanism(p as never),
  "k-subset": (p) => new KSubset(p as never),
  orr: (p) => new ORR(p as never),
  orappor: (p) => new ORAPPOR(p as never),
  cms: (p) => new CMS(p as never),
  hcms: (p) => new HCMS(p as never),
  duchi: (p) => new Duchi(p as never),
  piecewise: (p) => new Piecewise(p as never),
  hybrid: (p) => new Hybrid(p as never),
  "square-wave": (p) => new SquareWave(p as never),
  loloha: (p) => new LOLOHA(p as never),
};

/** The mechanisms this client implements. */
export const CLIENT_MECHANISMS: readonly string[] = Object.keys(FACTORIES);

export function mechanismFromSpec(spec: Spec): ClientMechanism {
  if (spec.set !== undefined) {
    if (spec.set !== "sample-one" || spec.mechanism === undefined || spec.mechanism.set !== undefined) throw new RangeError("set wrapper must be sample-one over a mechanism");
    const inner = spec.mechanism;
    const innerMech = mechanismFromSpec(inner);
    const make = FACTORIES[inner.name as string];
    // the wrapper answers the same calls as a mechanism (randomize, toWire, reportFields, spec)
    return new SampleOne(innerMech, spec.m as number, (spec.on_long ?? "error") as "error" | "sample",
      (pad) => make({ ...(inner.params ?? {}), ...pad, ...(pad.categories ? { d: null } : {}) })) as unknown as ClientMechanism;
  }
  const make = FACTORIES[spec.name as string];
  if (make === undefined || spec.params == null) throw new RangeError(`mechanism must be one of ${CLIENT_MECHANISMS.join(", ")}`);
  return make(spec.params);
}
