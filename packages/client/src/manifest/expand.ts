/**
 * `${VAR}` and `${VAR:-default}` expansion inside one manifest string (DESIGN §7). Expansion works
 * on a single string and returns a single string, so a value can never split one argv element into
 * several arguments (no word splitting, no globbing, no command substitution).
 */
import { ManifestError } from './errors.js';

/** The host's own credential variables: a tool host expands a manifest without them (DESIGN §7), on purpose. */
const CREDENTIAL_VARS = new Set(['TOOLWIRE_TOKEN', 'TOOLWIRE_TOKEN_FILE']);

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Expand every `${NAME}` and `${NAME:-default}` in `text` from `env`.
 * - `${NAME}`: the variable's value; an unset variable is an error (write `${NAME:-}` for "empty if unset").
 * - `${NAME:-default}`: the value when set and non-empty, else `default` (taken literally, up to `}`).
 * Any other `${` (e.g. `${1}`, `${A:=b}`, an unclosed `${`) is an error, so typos do not pass silently.
 *
 * @param keyPath where the string sits, for errors, e.g. `tools.grep.command[2]`
 * @throws ManifestError naming `keyPath` and the variable
 */
export function expandVars(text: string, env: NodeJS.ProcessEnv, keyPath: string): string {
  if (!text.includes('${')) return text;
  // Anything still looking like `${` once the valid forms are removed is unsupported syntax. Check the
  // template, not the output: a variable's value may itself contain `${`.
  const leftover = text.replace(REFERENCE, '');
  const at = leftover.indexOf('${');
  if (at !== -1) {
    throw new ManifestError(keyPath, `has an unsupported expansion near ${JSON.stringify(leftover.slice(at, at + 24))} (only \${NAME} and \${NAME:-default})`);
  }
  const expanded = text.replace(REFERENCE, (_match, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
    if (value === undefined && CREDENTIAL_VARS.has(name)) {
      throw new ManifestError(
        keyPath,
        `uses \${${name}}, which the tool host withholds on purpose: a tool never sees the host's own credentials (give the tool a secret of its own in another variable)`,
      );
    }
    if (value === undefined) {
      throw new ManifestError(keyPath, `uses \${${name}} but ${name} is not set (write \${${name}:-default} to give a default)`);
    }
    return value;
  });
  return expanded;
}
