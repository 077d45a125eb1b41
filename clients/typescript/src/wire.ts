/**
 * The versioned wire format of the Python client (ldp_plugin/mechanisms/reports.py), version 1:
 *
 *   "LDPW" | version u8 | flags u8 | tag length u16 LE | tag | fingerprint (16 bytes) | n u32 LE
 *   | each report field in order: n · width · itemsize bytes, little-endian
 *
 * The fingerprint is the first 16 bytes of SHA-256 of the mechanism's canonical spec JSON.
 */
import { pyDumps, type PyJSON } from "./pyjson.js";
import { sha256 } from "./sha256.js";

export const WIRE_MAGIC = new Uint8Array([0x4c, 0x44, 0x50, 0x57]); // "LDPW"
export const WIRE_VERSION = 1;

/** One report column: `ReportField` of the Python client. */
export interface ReportField {
  name: string;
  dtype: "uint8" | "uint16" | "uint32" | "uint64" | "bool";
  width: number; // 0: one value per report
  kind: "int" | "bits" | "sorted" | "bool";
  bound: number | null;
}

export const ITEMSIZE: Record<ReportField["dtype"], number> = { uint8: 1, uint16: 2, uint32: 4, uint64: 8, bool: 1 };

/** A report: one value (number/bigint/boolean) or one fixed-width row (Uint8Array for bytes, number[]) per field. */
export type ReportValue = number | bigint | boolean | Uint8Array | number[];
export type Report = Record<string, ReportValue>;

export function wireFingerprint(spec: PyJSON): Uint8Array {
  return sha256(new TextEncoder().encode(pyDumps(spec))).subarray(0, 16);
}

function writeValue(dv: DataView, pos: number, dtype: ReportField["dtype"], v: number | bigint | boolean): number {
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
export function reportSize(fields: readonly ReportField[]): number {
  return fields.reduce((s, f) => s + ITEMSIZE[f.dtype] * Math.max(f.width, 1), 0);
}

/** The wire blob of a batch of reports (`to_wire`; a device sends a batch of one). */
export function toWire(fields: readonly ReportField[], fingerprint: Uint8Array, reports: readonly Report[], tag: Uint8Array = new Uint8Array(0)): Uint8Array {
  if (tag.length > 255) throw new RangeError("a wire tag is at most 255 bytes");
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
        const row = v as ArrayLike<number>;
        if (row.length !== f.width) throw new RangeError(`report field ${f.name} must have width ${f.width}`);
        for (let j = 0; j < f.width; j++) pos = writeValue(dv, pos, f.dtype, row[j]);
      } else {
        pos = writeValue(dv, pos, f.dtype, v as number | bigint | boolean);
      }
    }
  }
  return out;
}
