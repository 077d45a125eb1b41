/**
 * One number per user on a declared range [lower, upper], on exact grids, as the Python client's
 * `Duchi`, `Piecewise`, `Hybrid` (numeric means) and `SquareWave` (distributions; Li et al.,
 * SIGMOD 2020). The mean mechanisms map the number to t in [−1, 1], round it to one of grid + 1
 * points by randomized rounding (one uniform 64-bit word against an integer threshold), then draw
 * the report: Duchi one word against T(k) = t_low + k·step; Piecewise a Bernoulli for the window and
 * an exactly uniform cell inside or outside it (Wang et al., ICDE 2019). Square Wave takes the
 * number's cell among grid cells and draws its window the same way. Realized ratios are checked
 * <= e**ε exactly. Report: one u32.
 */
import { Bernoulli, uniformInt } from "../bernoulli.js";
import { expLowerBound, leq, TWO64, type Rational } from "../exact.js";
import { wordLE } from "../hashing.js";
import { PyFloat, type PyJSON } from "../pyjson.js";
import { secureSource, type RandomSource } from "../source.js";
import type { Report, ReportField } from "../wire.js";
import { ClientMechanism, type Label } from "./base.js";

type NumParams = { epsilon: number; lower?: number; upper?: number; grid?: number };

function floorT(num: bigint, den: bigint): bigint {
  return (num * TWO64) / den;
}

/** Python's round(): halves to even. */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

abstract class NumberMechanism extends ClientMechanism {
  readonly lower: number;
  readonly upper: number;
  readonly grid: number;

  constructor(params: NumParams, defaultGrid: number, maxGrid: number) {
    super({ epsilon: params.epsilon }, true);
    const lo = params.lower ?? 0, hi = params.upper ?? 1, g = params.grid ?? defaultGrid;
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi)) throw new RangeError("lower and upper must be finite numbers with lower < upper");
    if (!Number.isInteger(g) || g < 2 || g > maxGrid || (g & (g - 1)) !== 0) throw new RangeError(`grid must be a power of two in [2, ${maxGrid}]`);
    this.lower = lo;
    this.upper = hi;
    this.grid = g;
  }

  protected specParams(): Record<string, PyJSON> {
    return { epsilon: new PyFloat(this.epsilon), lower: new PyFloat(this.lower), upper: new PyFloat(this.upper), grid: this.grid };
  }

  protected checkValue(value: Label): number {
    if (typeof value !== "number" || !Number.isFinite(value) || value < this.lower || value > this.upper) {
      throw new RangeError(`the value must be a number in [lower, upper] = [${this.lower}, ${this.upper}]`);
    }
    return value;
  }

  randomize(value: Label, src: RandomSource = secureSource()): Report {
    return { report: this.sampleNumber(this.checkValue(value), src) };
  }

  randomizeCode(code: number, src: RandomSource): Report {
    return { report: this.sampleCell(code, src) };
  }

  protected abstract sampleNumber(x: number, src: RandomSource): number;
  /** The report of an already rounded grid index / cell. */
  protected abstract sampleCell(k: number, src: RandomSource): number;
}

/** Randomized rounding of t in [−1, 1] to a grid index in [0, grid]: one word each. */
function roundToGrid(x: number, lower: number, upper: number, grid: number, src: RandomSource): number {
  const t = Math.min(1, Math.max(-1, ((x - lower) / (upper - lower)) * 2.0 - 1.0));
  const pos = (t + 1.0) * (grid / 2.0);
  const k = Math.min(Math.floor(pos), grid);
  const frac = k === grid ? 0.0 : pos - k;
  const T = BigInt(Math.min(Math.floor(frac * 2 ** 64), 2 ** 64 - 2048));
  return k + (wordLE(src.randomBytes(8)) < T ? 1 : 0);
}

/** Bernoulli for the window, then a uniform cell inside [k, k + w) or outside it (`_window_sample`). */
class Window {
  readonly inside: Bernoulli;
  constructor(readonly threshold: bigint, readonly width: number, readonly cells: number) {
    this.inside = new Bernoulli(threshold);
  }
  sample(k: number, src: RandomSource): number {
    const inside = this.inside.draw(src);
    const jIn = k + uniformInt(src, this.width);
    const u = uniformInt(src, this.cells - this.width);
    return inside ? jIn : u < k ? u : u + this.width;
  }
  /** The window of `width` among `cells` whose probability is floor(2**64 · wE/(wE + cells − w))
   * (E a certain lower bound of e**ε), so that p_hi/p_lo <= e**ε; checked exactly. */
  static forEpsilon(epsilon: number, width: number, cells: number): Window {
    const E = expLowerBound(epsilon);
    const W = BigInt(width);
    const win = new Window(floorT(W * E.num, W * E.num + BigInt(cells - width) * E.den), width, cells);
    win.check(E);
    return win;
  }

  /** p_hi/p_lo = T(cells − w) / ((2**64 − T) w) <= L. */
  check(L: Rational): void {
    const T = this.threshold;
    if (!(T > 0n && T < TWO64)) throw new RangeError("epsilon gives a window probability that rounds to 0 or 1 at 64 bits");
    if (!leq({ num: T * BigInt(this.cells - this.width), den: (TWO64 - T) * BigInt(this.width) }, L)) throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
  }
}

export class Duchi extends NumberMechanism {
  readonly name: string = "duchi";
  readonly tLow: bigint;
  readonly step: bigint;

  constructor(params: NumParams) {
    super(params, 1024, 2 ** 20);
    const L = expLowerBound(this.epsilon);
    let tHi = floorT(L.num, L.num + L.den);
    const G = BigInt(this.grid);
    let spread = 2n * tHi - TWO64;
    if (spread % G) tHi -= (spread % G) / 2n;
    spread = 2n * tHi - TWO64;
    if (spread <= 0n) throw new RangeError("epsilon is too small for the 2**64 threshold grid");
    this.tLow = TWO64 - tHi;
    this.step = spread / G;
    if (!leq({ num: this.tLow + this.step * G, den: this.tLow }, L)) throw new RangeError("the realized likelihood ratio exceeds e**epsilon");
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: 2 }];
  }

  protected sampleNumber(x: number, src: RandomSource): number {
    return this.sampleCell(roundToGrid(x, this.lower, this.upper, this.grid, src), src);
  }

  protected sampleCell(k: number, src: RandomSource): number {
    return wordLE(src.randomBytes(8)) < this.tLow + BigInt(k) * this.step ? 1 : 0;
  }
}

export class Piecewise extends NumberMechanism {
  readonly name: string = "piecewise";
  readonly window: Window;

  constructor(params: NumParams) {
    super(params, 1024, 2 ** 20);
    const h = Math.exp(this.epsilon / 2);
    const C = (h + 1) / (h - 1);
    const w = Math.max(1, roundHalfEven((this.grid * (C - 1)) / (C + 1)));
    this.window = Window.forEpsilon(this.epsilon, w, w + this.grid);
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.window.cells }];
  }

  protected sampleNumber(x: number, src: RandomSource): number {
    return this.sampleCell(roundToGrid(x, this.lower, this.upper, this.grid, src), src);
  }

  protected sampleCell(k: number, src: RandomSource): number {
    return this.window.sample(k, src);
  }
}

export class Hybrid extends NumberMechanism {
  readonly name: string = "hybrid";
  readonly duchi: Duchi;
  readonly piecewise: Piecewise;
  readonly componentThreshold: bigint;
  private readonly component: Bernoulli;

  constructor(params: NumParams) {
    super(params, 1024, 2 ** 20);
    this.duchi = new Duchi(params);
    this.piecewise = new Piecewise(params);
    const alpha = this.epsilon > 0.61 ? 1 - Math.exp(-this.epsilon / 2) : 0.0;
    this.componentThreshold = alpha > 0 ? BigInt(Math.floor(alpha * 2 ** 64)) : 0n;
    this.component = new Bernoulli(this.componentThreshold);
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: 2 + this.piecewise.window.cells }];
  }

  protected sampleNumber(x: number, src: RandomSource): number {
    return this.sampleCell(roundToGrid(x, this.lower, this.upper, this.grid, src), src);
  }

  protected sampleCell(k: number, src: RandomSource): number {
    const usePm = this.componentThreshold > 0n && this.component.draw(src);
    return usePm ? 2 + this.piecewise.window.sample(k, src) : this.duchi.randomizeCode(k, src).report as number;
  }
}

/** Square Wave's half-width b on the unit interval (Li et al., SIGMOD 2020, eq. 5). */
export function squareWaveB(epsilon: number): number {
  const e = Math.exp(epsilon);
  return (epsilon * e - e + 1) / (2 * e * (e - 1 - epsilon));
}

export class SquareWave extends NumberMechanism {
  readonly name: string = "square-wave";
  readonly window: Window;

  constructor(params: NumParams) {
    super(params, 256, 2 ** 16);
    const s = this.epsilon < 30 ? Math.max(0, roundHalfEven(squareWaveB(this.epsilon) * this.grid)) : 0;
    this.window = Window.forEpsilon(this.epsilon, 2 * s + 1, this.grid + 2 * s);
  }

  reportFields(): ReportField[] {
    return [{ name: "report", dtype: "uint32", width: 0, kind: "int", bound: this.window.cells }];
  }

  protected sampleNumber(x: number, src: RandomSource): number {
    const cell = Math.min(this.grid - 1, Math.max(0, Math.floor(((x - this.lower) / (this.upper - this.lower)) * this.grid)));
    return this.sampleCell(cell, src);
  }

  protected sampleCell(k: number, src: RandomSource): number {
    return this.window.sample(k, src);
  }
}
