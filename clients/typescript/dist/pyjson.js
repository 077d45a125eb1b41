/**
 * Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))` (ensure_ascii on), so a
 * mechanism's spec hashes to the same wire fingerprint in both clients. Numbers marked as floats
 * print as Python's `repr(float)` ("1.0", "1e-05", "1e+16").
 */
/** A number Python holds as a float (JSON "1.0", not "1"). */
export class PyFloat {
    constructor(value) {
        this.value = value;
    }
}
export function pyFloatRepr(x) {
    if (Number.isNaN(x))
        return "NaN";
    if (x === Infinity)
        return "Infinity";
    if (x === -Infinity)
        return "-Infinity";
    if (x === 0)
        return Object.is(x, -0) ? "-0.0" : "0.0";
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
    if (exp < 0)
        return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
    if (digits.length <= exp + 1)
        return `${sign}${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
    return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}
function pyString(s) {
    let out = '"';
    for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        const ch = s[i];
        if (ch === '"')
            out += '\\"';
        else if (ch === "\\")
            out += "\\\\";
        else if (ch === "\n")
            out += "\\n";
        else if (ch === "\r")
            out += "\\r";
        else if (ch === "\t")
            out += "\\t";
        else if (ch === "\b")
            out += "\\b";
        else if (ch === "\f")
            out += "\\f";
        else if (c < 0x20 || c > 0x7e)
            out += "\\u" + c.toString(16).padStart(4, "0");
        else
            out += ch;
    }
    return out + '"';
}
export function pyDumps(v) {
    if (v === null)
        return "null";
    if (v === true)
        return "true";
    if (v === false)
        return "false";
    if (v instanceof PyFloat)
        return pyFloatRepr(v.value);
    if (typeof v === "bigint")
        return v.toString();
    if (typeof v === "number") {
        if (!Number.isInteger(v))
            return pyFloatRepr(v);
        return String(v);
    }
    if (typeof v === "string")
        return pyString(v);
    if (Array.isArray(v))
        return "[" + v.map(pyDumps).join(",") + "]";
    const keys = Object.keys(v).sort();
    return "{" + keys.map((k) => pyString(k) + ":" + pyDumps(v[k])).join(",") + "}";
}
/**
 * Python's `json.loads`, keeping which numbers are floats (a fraction or an exponent in the text)
 * so that `pyDumps(pyLoads(text))` is Python's canonical dump of the same document — what a query's
 * content hash is computed over.
 */
export function pyLoads(text) {
    let i = 0;
    const ws = () => {
        while (i < text.length && " \t\n\r".includes(text[i]))
            i++;
    };
    const fail = () => {
        throw new SyntaxError("invalid JSON");
    };
    const value = () => {
        ws();
        const c = text[i];
        if (c === "{") {
            i++;
            const out = {};
            ws();
            if (text[i] === "}") {
                i++;
                return out;
            }
            for (;;) {
                ws();
                if (text[i] !== '"')
                    fail();
                const k = str();
                ws();
                if (text[i++] !== ":")
                    fail();
                out[k] = value();
                ws();
                if (text[i] === ",") {
                    i++;
                    continue;
                }
                if (text[i] === "}") {
                    i++;
                    return out;
                }
                fail();
            }
        }
        if (c === "[") {
            i++;
            const out = [];
            ws();
            if (text[i] === "]") {
                i++;
                return out;
            }
            for (;;) {
                out.push(value());
                ws();
                if (text[i] === ",") {
                    i++;
                    continue;
                }
                if (text[i] === "]") {
                    i++;
                    return out;
                }
                fail();
            }
        }
        if (c === '"')
            return str();
        if (text.startsWith("true", i)) {
            i += 4;
            return true;
        }
        if (text.startsWith("false", i)) {
            i += 5;
            return false;
        }
        if (text.startsWith("null", i)) {
            i += 4;
            return null;
        }
        const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
        if (!m)
            fail();
        const tok = m[0];
        i += tok.length;
        const isFloat = m[2] !== undefined || m[3] !== undefined;
        if (isFloat)
            return new PyFloat(Number(tok));
        return Number.isSafeInteger(Number(tok)) ? Number(tok) : BigInt(tok); // e.g. a 64-bit hash seed
    };
    const str = () => {
        let end = i + 1;
        while (end < text.length && text[end] !== '"')
            end += text[end] === "\\" ? 2 : 1;
        if (end >= text.length)
            fail();
        const s = JSON.parse(text.slice(i, end + 1));
        i = end + 1;
        return s;
    };
    const v = value();
    ws();
    if (i !== text.length)
        fail();
    return v;
}
/** A PyJSON value as plain JSON values (floats as numbers). */
export function plain(v) {
    if (v instanceof PyFloat)
        return v.value;
    if (Array.isArray(v))
        return v.map(plain);
    if (v !== null && typeof v === "object")
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
    return v;
}
