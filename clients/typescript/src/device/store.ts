/**
 * Where a device keeps its ledger: IndexedDB in a browser, a file under Node, memory in tests.
 * `update` is one atomic read-modify-write (an IndexedDB readwrite transaction; under Node an
 * exclusive lock file, the new state written to a temporary file and renamed over the old one), so
 * two tabs or processes never both spend the same remaining budget.
 */
export type LedgerState = Record<string, unknown>;

export interface LedgerStore {
  /** Apply `fn` to the stored state (null if none) atomically; store and return its result. */
  update<T>(fn: (state: LedgerState | null) => { state: LedgerState | null; result: T }): Promise<T>;
}

export class MemoryStore implements LedgerStore {
  private state: string | null = null;
  async update<T>(fn: (state: LedgerState | null) => { state: LedgerState | null; result: T }): Promise<T> {
    const out = fn(this.state === null ? null : (JSON.parse(this.state) as LedgerState));
    if (out.state !== null) this.state = JSON.stringify(out.state);
    return out.result;
  }
}

export class IndexedDBStore implements LedgerStore {
  constructor(readonly dbName: string = "ldp-device", readonly key: string = "ledger") {}

  private open(): Promise<IDBDatabase> {
    return new Promise((resolve, reject) => {
      const req = globalThis.indexedDB.open(this.dbName, 1);
      req.onupgradeneeded = () => req.result.createObjectStore("ledger");
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(new Error("the device ledger (IndexedDB) cannot be opened"));
    });
  }

  async update<T>(fn: (state: LedgerState | null) => { state: LedgerState | null; result: T }): Promise<T> {
    const db = await this.open();
    try {
      return await new Promise<T>((resolve, reject) => {
        const tx = db.transaction("ledger", "readwrite");
        const store = tx.objectStore("ledger");
        let result: T;
        const get = store.get(this.key);
        get.onsuccess = () => {
          try {
            const raw = get.result as string | undefined;
            const out = fn(raw === undefined ? null : (JSON.parse(raw) as LedgerState));
            result = out.result;
            if (out.state !== null) store.put(JSON.stringify(out.state), this.key);
          } catch (e) {
            tx.abort();
            reject(e);
          }
        };
        tx.oncomplete = () => resolve(result);
        tx.onerror = () => reject(new Error("the device ledger (IndexedDB) transaction failed"));
      });
    } finally {
      db.close();
    }
  }
}

export class FileStore implements LedgerStore {
  constructor(readonly path: string) {}

  async update<T>(fn: (state: LedgerState | null) => { state: LedgerState | null; result: T }): Promise<T> {
    const fs = await import("node:fs/promises");
    const lock = `${this.path}.lock`;
    let handle = null;
    for (let attempt = 0; handle === null; attempt++) {
      try {
        handle = await fs.open(lock, "wx");
      } catch (e) {
        if ((e as { code?: string }).code !== "EEXIST" || attempt > 500) throw new Error("the device ledger file is locked by another process");
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    try {
      let raw: string | null = null;
      try {
        raw = await fs.readFile(this.path, "utf8");
      } catch (e) {
        if ((e as { code?: string }).code !== "ENOENT") throw e;
      }
      const out = fn(raw === null ? null : (JSON.parse(raw) as LedgerState));
      if (out.state !== null) {
        const tmp = `${this.path}.tmp`;
        const fh = await fs.open(tmp, "w");
        await fh.writeFile(JSON.stringify(out.state));
        await fh.sync();
        await fh.close();
        await fs.rename(tmp, this.path);
      }
      return out.result;
    } finally {
      await handle.close();
      await fs.unlink(lock);
    }
  }
}
