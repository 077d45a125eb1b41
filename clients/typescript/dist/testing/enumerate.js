export class NotEnumerable extends Error {
}
class EnumeratingSource {
    constructor() {
        this.secure = false;
        this.path = [];
        this.sizes = [];
        this.calls = [];
        this.depth = 0;
        this.choose = (kind, param, outcomes) => {
            const i = this.depth++;
            if (i === this.path.length) {
                this.path.push(0);
                this.sizes.push(outcomes);
            }
            else if (this.sizes[i] !== outcomes) {
                throw new NotEnumerable("the client's calls depend on something other than their outcomes");
            }
            const o = this.path[i];
            this.calls.push([kind, param.toString(), o]);
            return o;
        };
    }
    reset() {
        this.depth = 0;
        this.calls = [];
    }
    randomBytes() {
        throw new NotEnumerable("the client reads raw random bytes (per-user seeds or words): not enumerable");
    }
    /** Next path in depth-first order; false when every leaf has been visited. */
    advance() {
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
export function enumerateClient(mech, code, maxLeaves = 50000) {
    const src = new EnumeratingSource();
    const leaves = [];
    do {
        if (leaves.length >= maxLeaves)
            throw new NotEnumerable(`more than ${maxLeaves} outcome paths`);
        src.reset();
        const report = mech.randomizeCode(code, src);
        leaves.push({ calls: src.calls, report });
    } while (src.advance());
    return leaves;
}
