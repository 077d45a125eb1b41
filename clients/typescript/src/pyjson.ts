/**
 * Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))` (ensure_ascii on), so a
 * mechanism's spec hashes to the same wire fingerprint in both clients. Numbers marked as floats
 * print as Python's `repr(float)` ("1.0", "1e-05", "1e+16").
 */

/** A number Python holds as a float (JSON "1.0", not "1"). */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyJSON = null | boolean | number | string | PyFloat | PyJSON[] | { [k: string]: PyJSON };

export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  // shortest round-trip digits, then Python's layout: exponent form iff exp < -4 or exp >= 16
  const [mant, expStr] = x.toExponential().split("e");
  const exp = parseInt(expStr, 10);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  const sign = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return `${sign}${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
  return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || c > 0x7e) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

export function pyDumps(v: PyJSON): string {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (typeof v === "number") {
    if (!Number.isInteger(v)) return pyFloatRepr(v);
    return String(v);
  }
  if (typeof v === "string") return pyString(v);
  if (Array.isArray(v)) return "[" + v.map(pyDumps).join(",") + "]";
  const keys = Object.keys(v).sort();
  return "{" + keys.map((k) => pyString(k) + ":" + pyDumps(v[k])).join(",") + "}";
}
