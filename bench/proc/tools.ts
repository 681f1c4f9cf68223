/**
 * Names, tokens and tool sets shared by the bench processes. Host `i` is identity `h<i>` with token
 * `bench-host-token-<i>`; every host advertises 10 tools.
 */

/** How many identities the toolwire server is configured with when not told otherwise. */
export const DEFAULT_HOSTS = 1;

export function hostName(i: number): string {
  return `h${i}`;
}

export function hostToken(i: number): string {
  return `bench-host-token-${String(i).padStart(6, '0')}`;
}

export function callerName(i: number): string {
  return `c${i}`;
}

export function callerToken(i: number): string {
  return `bench-caller-token-${String(i).padStart(6, '0')}`;
}

/** An input schema like a real tool's (a few typed properties), built fresh per call. */
export function fillerSchema(k: number): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      path: { type: 'string', description: `path for filler ${k}` },
      limit: { type: 'integer', minimum: 1, maximum: 1000 },
      recursive: { type: 'boolean' },
    },
    required: ['path'],
    additionalProperties: false,
  };
}

/** Number of filler tools beside `echo` and `cat` (10 tools per host). */
export const FILLERS = 8;
