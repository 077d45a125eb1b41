/**
 * Verification tooling (not part of the bundle): the exact output distribution of the real client
 * on one input, by replaying it once per leaf of the tree of its sampler calls' outcomes (depth
 * first), as the Python client's `verification/client_channel.py`. Each leaf lists the calls the
 * client made — kind, the threshold or range it passed, the outcome it got — so the verifier
 * weighs the leaf from the integers the client really used, not from what it documents.
 */
import type { ClientMechanism } from "../mechanisms/base.js";
import type { RandomSource } from "../source.js";
import type { Report } from "../wire.js";

export class NotEnumerable extends Error {}

export interface Leaf {
  calls: [string, string, number][];
  report: Report;
}

class EnumeratingSource implements RandomSource {
  readonly secure = false;
  path: number[] = [];
  sizes: number[] = [];
  calls: [string, string, number][] = [];
  private depth = 0;

  reset(): void {
    this.depth = 0;
    this.calls = [];
  }

  randomBytes(): Uint8Array {
    throw new NotEnumerable("the client reads raw random bytes (per-user seeds or words): not enumerable");
  }

  choose = (kind: "bernoulli" | "uniform", param: bigint, outcomes: number): number => {
    const i = this.depth++;
    if (i === this.path.length) {
      this.path.push(0);
      this.sizes.push(outcomes);
    } else if (this.sizes[i] !== outcomes) {
      throw new NotEnumerable("the client's calls depend on something other than their outcomes");
    }
    const o = this.path[i];
    this.calls.push([kind, param.toString(), o]);
    return o;
  };

  /** Next path in depth-first order; false when every leaf has been visited. */
  advance(): boolean {
    this.path.length = this.depth;
    this.sizes.length = this.depth;
    while (this.path.length) {
      const i = this.path.length - 1;
      if (this.path[i] + 1 < this.sizes[i]) {
        this.path[i]++;
        return true;
      }
      this.path.pop();
      this.sizes.pop();
    }
    return false;
  }
}

/** Every leaf of the client's outcome tree on input `code` (at most `maxLeaves`). */
export function enumerateClient(mech: ClientMechanism, code: number, maxLeaves = 50_000): Leaf[] {
  const src = new EnumeratingSource();
  const leaves: Leaf[] = [];
  do {
    if (leaves.length >= maxLeaves) throw new NotEnumerable(`more than ${maxLeaves} outcome paths`);
    src.reset();
    const report = mech.randomizeCode(code, src);
    leaves.push({ calls: src.calls, report });
  } while (src.advance());
  return leaves;
}
