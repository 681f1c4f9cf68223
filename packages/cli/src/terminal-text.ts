/**
 * Text from peers, made safe for one line of a terminal. A tool host's advertised `title` and
 * `description` and a caller's tool name may hold any character (README "Security": everything a
 * peer sends is hostile); printed raw, ESC or CSI (U+009B) starts a sequence that clears the
 * screen, hides or recolours text, sets the window title or, in many terminals, writes the
 * clipboard (OSC 52). Each C0/C1 control character and DEL is shown as its JSON escape (`\u001b`),
 * and so is each bidirectional mark, embedding, override and isolate (U+061C, U+200E-F, U+202A-E,
 * U+2066-9: they reorder what follows on screen, "Trojan Source") and the line and paragraph
 * separators U+2028-9.
 */

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/** `text` with every control and bidirectional formatting character shown as `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A name from a caller as one bounded, printable field: at most `max` characters (default 80) of it, then `…`. */
export function shownName(name: string, max = 80): string {
  return printable(name.length > max ? `${name.slice(0, max)}…` : name);
}

/**
 * A value the user typed (an option's argument, a name), quoted for an error line: JSON-quoted, at
 * most `max` characters of it (default 80) then `…`, control and bidirectional characters escaped.
 * An error line never echoes a 100 KB argument whole.
 */
export function quotedArg(text: string | undefined, max = 80): string {
  if (text === undefined) return 'undefined';
  return printable(JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text));
}
