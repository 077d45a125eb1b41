/**
 * The versioned wire format of the Python client (ldp_plugin/mechanisms/reports.py), version 1:
 *
 *   "LDPW" | version u8 | flags u8 | tag length u16 LE | tag | fingerprint (16 bytes) | n u32 LE
 *   | each report field in order: n · width · itemsize bytes, little-endian
 *
 * The fingerprint is the first 16 bytes of SHA-256 of the mechanism's canonical spec JSON.
 */
import { type PyJSON } from "./pyjson.js";
export declare const WIRE_MAGIC: Uint8Array<ArrayBuffer>;
export declare const WIRE_VERSION = 1;
/** One report column: `ReportField` of the Python client. */
export interface ReportField {
    name: string;
    dtype: "uint8" | "uint16" | "uint32" | "uint64" | "bool";
    width: number;
    kind: "int" | "bits" | "sorted" | "bool";
    bound: number | null;
}
export declare const ITEMSIZE: Record<ReportField["dtype"], number>;
/** A report: one value (number/bigint/boolean) or one fixed-width row (Uint8Array for bytes, number[]) per field. */
export type ReportValue = number | bigint | boolean | Uint8Array | number[];
export type Report = Record<string, ReportValue>;
export declare function wireFingerprint(spec: PyJSON): Uint8Array;
/** Bytes of one report's payload (fields in order). */
export declare function reportSize(fields: readonly ReportField[]): number;
/** The wire blob of a batch of reports (`to_wire`; a device sends a batch of one). */
export declare function toWire(fields: readonly ReportField[], fingerprint: Uint8Array, reports: readonly Report[], tag?: Uint8Array): Uint8Array;
