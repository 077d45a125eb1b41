/**
 * The device: the randomizer runs where the value lives, and the device can refuse (the Python
 * device's `DeviceFleet` for one device). For each query it checks, cheapest first and before it
 * looks at the value: the query's version and form, the owner's policy (allowed mechanisms, the
 * maximum ε per query), that the mechanism is one this client implements with the query's ε, then
 * — in one atomic ledger update — that the query was not already answered (a retry gets the kept
 * envelope, charged once; a charge without a released reply refuses as `interrupted`, never
 * randomizing twice) and that the lifetime and period caps leave room for ε — for a memoized
 * series (LOLOHA) the charge is the increment of the series' lifetime bound at the device's
 * collection number t, counted from its own spends of the same spec; it records the spend
 * *before* it randomizes. Only then is the value encoded and randomized (CSPRNG) and the envelope
 * kept. Every refusal depends on the query, the policy and the ledger only, never on the value.
 */
import { pyDumps, pyFloatRepr, type PyJSON } from "../pyjson.js";
import { LOLOHA } from "../mechanisms/loloha.js";
import { seal } from "../envelope.js";
import { mechanismFromSpec } from "../spec.js";
import { parseQuery, QueryError, type Query } from "../query.js";
import type { ClientMechanism, Label } from "../mechanisms/base.js";
import { Frac } from "./fraction.js";
import { DevicePolicy, type PolicyInit } from "./policy.js";
import type { LedgerState, LedgerStore } from "./store.js";

export const LEDGER_FORMAT = "ldp-device-ledger";

export class DeviceRefusal extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface Answer {
  /** nonce + one wire report, to post to the collector; null when refused */
  envelope: Uint8Array | null;
  refused: string | null;
  /** true when this is the kept answer of a query already charged */
  retry: boolean;
}

interface Spend {
  query: string;
  epsilon: string;
  when: string;
  period_key: string | null;
  mechanism: string;
  /** the spec without its charging relation: a memoized series' collections share it */
  series?: string | null;
  status: "started" | "released";
  reply: string | null;
}

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

/** A spec without its charging relation (which changes no report). */
function tableSpec(spec: Record<string, unknown>): PyJSON {
  const params = { ...(spec.params as Record<string, unknown>) };
  delete params.relation;
  return { name: spec.name as string, params: params as Record<string, PyJSON> };
}

function spendsOf(state: LedgerState, policy: DevicePolicy): Spend[] {
  if (state.format !== LEDGER_FORMAT || state.version !== 1 || !Array.isArray(state.spends)) throw new DeviceRefusal("ledger_corrupted");
  const caps = policy.caps();
  const pop = state.population as Record<string, unknown>;
  if (pop.lifetime_cap !== caps.lifetime_cap || pop.period_cap !== caps.period_cap || pop.period !== caps.period) throw new DeviceRefusal("ledger_mismatch");
  return state.spends as Spend[];
}

export class Device {
  private constructor(readonly policy: DevicePolicy, readonly store: LedgerStore, private readonly now: () => Date) {}

  /**
   * The device of its owner's policy over `store`. The first open creates the ledger with the
   * policy's caps; a later open with other caps is refused (`ledger_mismatch`): only the owner's
   * {@link Device.reset} starts a new budget.
   */
  static async open(store: LedgerStore, policy: PolicyInit, options: { now?: () => Date } = {}): Promise<Device> {
    const p = new DevicePolicy(policy);
    await store.update((state) => {
      if (state === null) return { state: Device.fresh(p), result: null };
      spendsOf(state, p);
      return { state: null, result: null };
    });
    return new Device(p, store, options.now ?? (() => new Date()));
  }

  /** The owner's reset: a new, empty ledger with `policy`'s caps (the old spends are dropped). */
  static async reset(store: LedgerStore, policy: PolicyInit): Promise<void> {
    const p = new DevicePolicy(policy);
    await store.update(() => ({ state: Device.fresh(p), result: null }));
  }

  /** A new ledger: the owner's caps, no spend, and the device's secret key for memoized series
   * (32 bytes from the CSPRNG; it never leaves the device). */
  private static fresh(p: DevicePolicy): LedgerState {
    return { format: LEDGER_FORMAT, version: 1, population: p.caps(), spends: [], key: hex(globalThis.crypto.getRandomValues(new Uint8Array(32))) };
  }

  /** Remaining budget (exact text): the lifetime cap and, with a period, this period's. */
  async remaining(): Promise<{ lifetime: string; period: string | null }> {
    return this.store.update((state) => {
      const spends = spendsOf(state as LedgerState, this.policy);
      const pk = this.policy.periodKey(this.now());
      let all = new Frac(0n, 1n), inPeriod = new Frac(0n, 1n);
      for (const s of spends) {
        const e = Frac.parse(s.epsilon);
        all = all.add(e);
        if (pk !== null && s.period_key === pk) inPeriod = inPeriod.add(e);
      }
      const period = this.policy.periodCap === null ? null : this.policy.periodCap.sub(inPeriod).toString();
      return { state: null, result: { lifetime: this.policy.lifetimeCap.sub(all).toString(), period } };
    });
  }

  /** Answer one query (its JSON as the server serves it) with this device's `value`. */
  async respond(queryJson: string, value: Label | Label[]): Promise<Answer> {
    const refuse = (reason: string, retry = false): Answer => ({ envelope: null, refused: reason, retry });
    let q: Query;
    try {
      q = parseQuery(queryJson);
    } catch (e) {
      if (e instanceof QueryError) return refuse(e.reason);
      throw e;
    }
    const reason = this.policy.refusal(q.spec.name, q.epsilon, q.spec.params.relation);
    if (reason !== null) return refuse(reason);
    let mech: ClientMechanism;
    try {
      mech = mechanismFromSpec(q.spec);
    } catch {
      return refuse("malformed_query"); // not a mechanism this client implements (or bad parameters)
    }
    if (Frac.parse(pyFloatRepr(mech.epsilon)).cmp(q.epsilon) !== 0) return refuse("malformed_query");
    const qid = hex(q.contentHash);
    const when = this.now();
    const pk = this.policy.periodKey(when);
    const series = mech instanceof LOLOHA ? pyDumps(tableSpec(q.spec)) : null;
    let key: Uint8Array | null = null;
    let charge = q.epsilon;
    const decision = await this.store.update<{ kind: string; reply?: string }>((state) => {
      if (state === null) throw new DeviceRefusal("ledger_missing");
      const spends = spendsOf(state, this.policy);
      const rec = spends.find((s) => s.query === qid);
      if (rec !== undefined) return { state: null, result: rec.status === "released" ? { kind: "kept", reply: rec.reply as string } : { kind: "interrupted" } };
      if (mech instanceof LOLOHA) {
        // collection t of the series: the increment of its lifetime bound (a function of t only)
        if (typeof state.key !== "string") return { state: null, result: { kind: "keystore_missing" } };
        key = unhex(state.key);
        const t = 1 + spends.filter((s) => s.series === series).length;
        charge = mech.collectionCost(t);
        if (charge.cmp(this.policy.maxEpsilonPerQuery) > 0) return { state: null, result: { kind: "epsilon_above_policy" } };
      }
      let all = new Frac(0n, 1n), inPeriod = new Frac(0n, 1n);
      for (const s of spends) {
        const e = Frac.parse(s.epsilon);
        all = all.add(e);
        if (pk !== null && s.period_key === pk) inPeriod = inPeriod.add(e);
      }
      if (this.policy.lifetimeCap.sub(all).cmp(charge) < 0) return { state: null, result: { kind: "budget_exhausted" } };
      if (this.policy.periodCap !== null && this.policy.periodCap.sub(inPeriod).cmp(charge) < 0) return { state: null, result: { kind: "budget_exhausted" } };
      spends.push({ query: qid, epsilon: charge.toString(), when: when.toISOString(), period_key: pk, mechanism: mech.name, series, status: "started", reply: null });
      return { state, result: { kind: "charged" } };
    });
    if (decision.kind === "kept") return { envelope: unhex(decision.reply as string), refused: null, retry: true };
    if (decision.kind === "interrupted") return refuse("interrupted", true);
    if (decision.kind !== "charged") return refuse(decision.kind); // budget_exhausted, epsilon_above_policy, keystore_missing
    // charged: only now is the value looked at
    const report = mech instanceof LOLOHA ? mech.randomizeKeyed(value as Label, key as unknown as Uint8Array) : mech.randomize(value as Label); // a set for a set wrapper
    const envelope = seal(mech.toWire(report, q.contentHash));
    await this.store.update((state) => {
      const rec = spendsOf(state as LedgerState, this.policy).find((s) => s.query === qid) as Spend;
      rec.status = "released";
      rec.reply = hex(envelope);
      return { state, result: null };
    });
    return { envelope, refused: null, retry: false };
  }
}
