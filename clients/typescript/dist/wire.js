/**
 * The versioned wire format of the Python client (ldp_plugin/mechanisms/reports.py), version 1:
 *
 *   "LDPW" | version u8 | flags u8 | tag length u16 LE | tag | fingerprint (16 bytes) | n u32 LE
 *   | each report field in order: n · width · itemsize bytes, little-endian
 *
 * The fingerprint is the first 16 bytes of SHA-256 of the mechanism's canonical spec JSON.
 */
import { pyDumps } from "./pyjson.js";
import { sha256 } from "./sha256.js";
export const WIRE_MAGIC = new Uint8Array([0x4c, 0x44, 0x50, 0x57]); // "LDPW"
export const WIRE_VERSION = 1;
export const ITEMSIZE = { uint8: 1, uint16: 2, uint32: 4, uint64: 8, bool: 1 };
export function wireFingerprint(spec) {
    return sha256(new TextEncoder().encode(pyDumps(spec))).subarray(0, 16);
}
function writeValue(dv, pos, dtype, v) {
    switch (dtype) {
        case "bool":
        case "uint8":
            dv.setUint8(pos, Number(v));
            return pos + 1;
        case "uint16":
            dv.setUint16(pos, Number(v), true);
            return pos + 2;
        case "uint32":
            dv.setUint32(pos, Number(v), true);
            return pos + 4;
        case "uint64":
            dv.setBigUint64(pos, BigInt(v), true);
            return pos + 8;
    }
}
/** Bytes of one report's payload (fields in order). */
export function reportSize(fields) {
    return fields.reduce((s, f) => s + ITEMSIZE[f.dtype] * Math.max(f.width, 1), 0);
}
/** The wire blob of a batch of reports (`to_wire`; a device sends a batch of one). */
export function toWire(fields, fingerprint, reports, tag = new Uint8Array(0)) {
    if (tag.length > 255)
        throw new RangeError("a wire tag is at most 255 bytes");
    const n = reports.length;
    const head = 8 + tag.length + 16 + 4;
    const out = new Uint8Array(head + n * reportSize(fields));
    const dv = new DataView(out.buffer);
    out.set(WIRE_MAGIC, 0);
    dv.setUint8(4, WIRE_VERSION);
    dv.setUint8(5, 0);
    dv.setUint16(6, tag.length, true);
    out.set(tag, 8);
    out.set(fingerprint, 8 + tag.length);
    dv.setUint32(8 + tag.length + 16, n, true);
    let pos = head;
    for (const f of fields) {
        for (const r of reports) {
            const v = r[f.name];
            if (f.width) {
                const row = v;
                if (row.length !== f.width)
                    throw new RangeError(`report field ${f.name} must have width ${f.width}`);
                for (let j = 0; j < f.width; j++)
                    pos = writeValue(dv, pos, f.dtype, row[j]);
            }
            else {
                pos = writeValue(dv, pos, f.dtype, v);
            }
        }
    }
    return out;
}
