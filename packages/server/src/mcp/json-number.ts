/**
 * Whether a JSON number's value survives `JSON.parse` → `JSON.stringify` (`12345678901234567890`,
 * `0.1000000000000000000001`, `1e400`, `1e-400` do not). Value, not spelling, counts: `1.0`, `1e2`
 * and `-0` arrive as `1`, `100` and `0`, the same numbers. Used by the door's input scan
 * (`input-scan.ts`) on each number in a call's `arguments`.
 */

/** The value of a number text as `<sign><digits>e<exponent>` with no leading or trailing zero digits; `0` for zero (and -0). */
function decimal(text: string): string {
  let i = 0;
  const negative = text.charCodeAt(0) === 0x2d;
  if (negative) i++;
  let digits = '';
  let exponent = 0;
  let fraction = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) fraction = true;
    else if (c === 0x65 || c === 0x45) {
      exponent += Number(text.slice(i + 1)); // "+21", "-7", "400"
      break;
    } else {
      digits += text[i];
      if (fraction) exponent--;
    }
  }
  let start = 0;
  while (start < digits.length && digits.charCodeAt(start) === 0x30) start++;
  let end = digits.length;
  while (end > start && digits.charCodeAt(end - 1) === 0x30) {
    end--;
    exponent++;
  }
  if (start === end) return '0'; // zero, -0 included
  return `${negative ? '-' : ''}${digits.slice(start, end)}e${exponent}`;
}

/**
 * Whether the JSON number `text` has the same value after `JSON.parse` → `JSON.stringify`. Up to 15
 * significant digits every decimal in the double range survives, so a short plain number needs no work.
 */
export function numberSurvives(text: string): boolean {
  if (text.length <= 15 && !/[eE]/.test(text)) return true;
  const value = Number(text);
  if (!Number.isFinite(value)) return false;
  return decimal(text) === decimal(String(value));
}
