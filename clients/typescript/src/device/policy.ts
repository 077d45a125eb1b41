/**
 * What a device enforces, set by its owner only, never by a server message (the Python device's
 * `DevicePolicy`): the mechanisms it allows, a maximum ε per query, and the lifetime and optional
 * per-period caps of its budget. Refusal reasons are the Python device's codes.
 */
import { Frac } from "./fraction.js";

export const PERIODS = ["day", "hour", "week"] as const;
export type Period = (typeof PERIODS)[number];

export interface PolicyInit {
  lifetimeCap: string;
  maxEpsilonPerQuery: string;
  allowedMechanisms?: string[] | null;
  periodCap?: string | null;
  period?: Period | null;
  /** the relations a memoized series may be charged under ("user" by default; "value" only if listed) */
  allowedRelations?: ("user" | "value")[];
}

export class DevicePolicy {
  readonly lifetimeCap: Frac;
  readonly maxEpsilonPerQuery: Frac;
  readonly allowedMechanisms: string[] | null;
  readonly periodCap: Frac | null;
  readonly period: Period | null;
  readonly allowedRelations: string[];

  constructor(init: PolicyInit) {
    const pos = (t: string, name: string): Frac => {
      const f = Frac.parse(t, name);
      if (f.num <= 0n) throw new RangeError(`${name} must be > 0`);
      return f;
    };
    this.lifetimeCap = pos(init.lifetimeCap, "lifetimeCap");
    this.maxEpsilonPerQuery = pos(init.maxEpsilonPerQuery, "maxEpsilonPerQuery");
    const allowed = init.allowedMechanisms ?? null;
    if (allowed !== null && (!Array.isArray(allowed) || !allowed.length || !allowed.every((a) => typeof a === "string" && a))) {
      throw new RangeError("allowedMechanisms must be a non-empty list of mechanism names");
    }
    this.allowedMechanisms = allowed === null ? null : allowed.map((a) => a.toLowerCase());
    if ((init.periodCap == null) !== (init.period == null)) throw new RangeError("give both periodCap and period (or neither)");
    this.periodCap = init.periodCap == null ? null : pos(init.periodCap, "periodCap");
    if (this.periodCap !== null && this.periodCap.cmp(this.lifetimeCap) > 0) throw new RangeError("periodCap must be in (0, lifetimeCap]");
    if (init.period != null && !PERIODS.includes(init.period)) throw new RangeError(`period must be one of ${PERIODS.join(", ")}`);
    this.period = init.period ?? null;
    const rel = init.allowedRelations ?? ["user"];
    if (!Array.isArray(rel) || !rel.length || !rel.every((r) => r === "user" || r === "value")) throw new RangeError('allowedRelations must be a non-empty list of "user" and/or "value"');
    this.allowedRelations = [...rel];
  }

  /** The reason this policy refuses a query, or null (checked before the ledger and the value). */
  refusal(mechanism: string, epsilon: Frac, relation: unknown): string | null {
    if (this.allowedMechanisms !== null && !this.allowedMechanisms.includes(mechanism.toLowerCase())) return "mechanism_not_allowed";
    if (relation != null && !this.allowedRelations.includes(relation as string)) return "relation_not_allowed";
    if (epsilon.cmp(this.maxEpsilonPerQuery) > 0) return "epsilon_above_policy";
    return null;
  }

  /** The caps as stored in the ledger (exact text). */
  caps(): { lifetime_cap: string; period_cap: string | null; period: Period | null } {
    return { lifetime_cap: this.lifetimeCap.toString(), period_cap: this.periodCap?.toString() ?? null, period: this.period };
  }

  /** The UTC period key of `when` (the Python accountant's `period_key`). */
  periodKey(when: Date): string | null {
    if (this.period === null) return null;
    const iso = when.toISOString();
    if (this.period === "day") return iso.slice(0, 10);
    if (this.period === "hour") return iso.slice(0, 13);
    // ISO week: the Thursday of this week decides the year
    const d = new Date(Date.UTC(when.getUTCFullYear(), when.getUTCMonth(), when.getUTCDate()));
    const day = d.getUTCDay() || 7;
    d.setUTCDate(d.getUTCDate() + 4 - day);
    const yearStart = Date.UTC(d.getUTCFullYear(), 0, 1);
    const week = Math.ceil(((d.getTime() - yearStart) / 86400000 + 1) / 7);
    return `${d.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
  }
}
