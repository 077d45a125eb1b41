/**
 * Where a device keeps its ledger: IndexedDB in a browser, a file under Node, memory in tests.
 * `update` is one atomic read-modify-write (an IndexedDB readwrite transaction; under Node an
 * exclusive lock file, the new state written to a temporary file and renamed over the old one), so
 * two tabs or processes never both spend the same remaining budget.
 */
export type LedgerState = Record<string, unknown>;
export interface LedgerStore {
    /** Apply `fn` to the stored state (null if none) atomically; store and return its result. */
    update<T>(fn: (state: LedgerState | null) => {
        state: LedgerState | null;
        result: T;
    }): Promise<T>;
}
export declare class MemoryStore implements LedgerStore {
    private state;
    update<T>(fn: (state: LedgerState | null) => {
        state: LedgerState | null;
        result: T;
    }): Promise<T>;
}
export declare class IndexedDBStore implements LedgerStore {
    readonly dbName: string;
    readonly key: string;
    constructor(dbName?: string, key?: string);
    private open;
    update<T>(fn: (state: LedgerState | null) => {
        state: LedgerState | null;
        result: T;
    }): Promise<T>;
}
export declare class FileStore implements LedgerStore {
    readonly path: string;
    constructor(path: string);
    update<T>(fn: (state: LedgerState | null) => {
        state: LedgerState | null;
        result: T;
    }): Promise<T>;
}
