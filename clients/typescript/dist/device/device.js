/**
 * The device: the randomizer runs where the value lives, and the device can refuse (the Python
 * device's `DeviceFleet` for one device). For each query it checks, cheapest first and before it
 * looks at the value: the query's version and form, the owner's policy (allowed mechanisms, the
 * maximum ε per query), that the mechanism is one this client implements with the query's ε, then
 * — in one atomic ledger update — that the query was not already answered (a retry gets the kept
 * envelope, charged once; a charge without a released reply refuses as `interrupted`, never
 * randomizing twice) and that the lifetime and period caps leave room for ε; it records the spend
 * *before* it randomizes. Only then is the value encoded and randomized (CSPRNG) and the envelope
 * kept. Every refusal depends on the query, the policy and the ledger only, never on the value.
 */
import { pyFloatRepr } from "../pyjson.js";
import { seal } from "../envelope.js";
import { mechanismFromSpec } from "../spec.js";
import { parseQuery, QueryError } from "../query.js";
import { Frac } from "./fraction.js";
import { DevicePolicy } from "./policy.js";
export const LEDGER_FORMAT = "ldp-device-ledger";
export class DeviceRefusal extends Error {
    constructor(reason) {
        super(reason);
        this.reason = reason;
    }
}
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s) => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));
function spendsOf(state, policy) {
    if (state.format !== LEDGER_FORMAT || state.version !== 1 || !Array.isArray(state.spends))
        throw new DeviceRefusal("ledger_corrupted");
    const caps = policy.caps();
    const pop = state.population;
    if (pop.lifetime_cap !== caps.lifetime_cap || pop.period_cap !== caps.period_cap || pop.period !== caps.period)
        throw new DeviceRefusal("ledger_mismatch");
    return state.spends;
}
export class Device {
    constructor(policy, store, now) {
        this.policy = policy;
        this.store = store;
        this.now = now;
    }
    /**
     * The device of its owner's policy over `store`. The first open creates the ledger with the
     * policy's caps; a later open with other caps is refused (`ledger_mismatch`): only the owner's
     * {@link Device.reset} starts a new budget.
     */
    static async open(store, policy, options = {}) {
        const p = new DevicePolicy(policy);
        await store.update((state) => {
            if (state === null)
                return { state: { format: LEDGER_FORMAT, version: 1, population: p.caps(), spends: [] }, result: null };
            spendsOf(state, p);
            return { state: null, result: null };
        });
        return new Device(p, store, options.now ?? (() => new Date()));
    }
    /** The owner's reset: a new, empty ledger with `policy`'s caps (the old spends are dropped). */
    static async reset(store, policy) {
        const p = new DevicePolicy(policy);
        await store.update(() => ({ state: { format: LEDGER_FORMAT, version: 1, population: p.caps(), spends: [] }, result: null }));
    }
    /** Remaining budget (exact text): the lifetime cap and, with a period, this period's. */
    async remaining() {
        return this.store.update((state) => {
            const spends = spendsOf(state, this.policy);
            const pk = this.policy.periodKey(this.now());
            let all = new Frac(0n, 1n), inPeriod = new Frac(0n, 1n);
            for (const s of spends) {
                const e = Frac.parse(s.epsilon);
                all = all.add(e);
                if (pk !== null && s.period_key === pk)
                    inPeriod = inPeriod.add(e);
            }
            const period = this.policy.periodCap === null ? null : this.policy.periodCap.sub(inPeriod).toString();
            return { state: null, result: { lifetime: this.policy.lifetimeCap.sub(all).toString(), period } };
        });
    }
    /** Answer one query (its JSON as the server serves it) with this device's `value`. */
    async respond(queryJson, value) {
        const refuse = (reason, retry = false) => ({ envelope: null, refused: reason, retry });
        let q;
        try {
            q = parseQuery(queryJson);
        }
        catch (e) {
            if (e instanceof QueryError)
                return refuse(e.reason);
            throw e;
        }
        const reason = this.policy.refusal(q.spec.name, q.epsilon, q.spec.params.relation);
        if (reason !== null)
            return refuse(reason);
        let mech;
        try {
            mech = mechanismFromSpec(q.spec);
        }
        catch {
            return refuse("malformed_query"); // not a mechanism this client implements (or bad parameters)
        }
        if (Frac.parse(pyFloatRepr(mech.epsilon)).cmp(q.epsilon) !== 0)
            return refuse("malformed_query");
        const qid = hex(q.contentHash);
        const when = this.now();
        const pk = this.policy.periodKey(when);
        const decision = await this.store.update((state) => {
            if (state === null)
                throw new DeviceRefusal("ledger_missing");
            const spends = spendsOf(state, this.policy);
            const rec = spends.find((s) => s.query === qid);
            if (rec !== undefined)
                return { state: null, result: rec.status === "released" ? { kind: "kept", reply: rec.reply } : { kind: "interrupted" } };
            let all = new Frac(0n, 1n), inPeriod = new Frac(0n, 1n);
            for (const s of spends) {
                const e = Frac.parse(s.epsilon);
                all = all.add(e);
                if (pk !== null && s.period_key === pk)
                    inPeriod = inPeriod.add(e);
            }
            if (this.policy.lifetimeCap.sub(all).cmp(q.epsilon) < 0)
                return { state: null, result: { kind: "budget_exhausted" } };
            if (this.policy.periodCap !== null && this.policy.periodCap.sub(inPeriod).cmp(q.epsilon) < 0)
                return { state: null, result: { kind: "budget_exhausted" } };
            spends.push({ query: qid, epsilon: q.epsilon.toString(), when: when.toISOString(), period_key: pk, mechanism: mech.name, status: "started", reply: null });
            return { state, result: { kind: "charged" } };
        });
        if (decision.kind === "kept")
            return { envelope: unhex(decision.reply), refused: null, retry: true };
        if (decision.kind === "interrupted")
            return refuse("interrupted", true);
        if (decision.kind === "budget_exhausted")
            return refuse("budget_exhausted");
        // charged: only now is the value looked at
        const envelope = seal(mech.toWire(mech.randomize(value), q.contentHash)); // a set for a set wrapper
        await this.store.update((state) => {
            const rec = spendsOf(state, this.policy).find((s) => s.query === qid);
            rec.status = "released";
            rec.reply = hex(envelope);
            return { state, result: null };
        });
        return { envelope, refused: null, retry: false };
    }
}
