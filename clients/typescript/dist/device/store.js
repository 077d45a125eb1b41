export class MemoryStore {
    constructor() {
        this.state = null;
    }
    async update(fn) {
        const out = fn(this.state === null ? null : JSON.parse(this.state));
        if (out.state !== null)
            this.state = JSON.stringify(out.state);
        return out.result;
    }
}
export class IndexedDBStore {
    constructor(dbName = "ldp-device", key = "ledger") {
        this.dbName = dbName;
        this.key = key;
    }
    open() {
        return new Promise((resolve, reject) => {
            const req = globalThis.indexedDB.open(this.dbName, 1);
            req.onupgradeneeded = () => req.result.createObjectStore("ledger");
            req.onsuccess = () => resolve(req.result);
            req.onerror = () => reject(new Error("the device ledger (IndexedDB) cannot be opened"));
        });
    }
    async update(fn) {
        const db = await this.open();
        try {
            return await new Promise((resolve, reject) => {
                const tx = db.transaction("ledger", "readwrite");
                const store = tx.objectStore("ledger");
                let result;
                const get = store.get(this.key);
                get.onsuccess = () => {
                    try {
                        const raw = get.result;
                        const out = fn(raw === undefined ? null : JSON.parse(raw));
                        result = out.result;
                        if (out.state !== null)
                            store.put(JSON.stringify(out.state), this.key);
                    }
                    catch (e) {
                        tx.abort();
                        reject(e);
                    }
                };
                tx.oncomplete = () => resolve(result);
                tx.onerror = () => reject(new Error("the device ledger (IndexedDB) transaction failed"));
            });
        }
        finally {
            db.close();
        }
    }
}
export class FileStore {
    constructor(path) {
        this.path = path;
    }
    async update(fn) {
        const fs = await import("node:fs/promises");
        const lock = `${this.path}.lock`;
        let handle = null;
        for (let attempt = 0; handle === null; attempt++) {
            try {
                handle = await fs.open(lock, "wx");
            }
            catch (e) {
                if (e.code !== "EEXIST" || attempt > 500)
                    throw new Error("the device ledger file is locked by another process");
                await new Promise((r) => setTimeout(r, 10));
            }
        }
        try {
            let raw = null;
            try {
                raw = await fs.readFile(this.path, "utf8");
            }
            catch (e) {
                if (e.code !== "ENOENT")
                    throw e;
            }
            const out = fn(raw === null ? null : JSON.parse(raw));
            if (out.state !== null) {
                const tmp = `${this.path}.tmp`;
                const fh = await fs.open(tmp, "w");
                await fh.writeFile(JSON.stringify(out.state));
                await fh.sync();
                await fh.close();
                await fs.rename(tmp, this.path);
            }
            return out.result;
        }
        finally {
            await handle.close();
            await fs.unlink(lock);
        }
    }
}
