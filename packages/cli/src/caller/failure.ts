/** The exit status and stderr line of the caller commands for each way an MCP exchange fails. */
import { ExitCode } from '@toolwire/protocol/constants';
import { HttpStatusError, NoAnswerError, RpcError, ServerLostError } from './errors.js';
import { tlsReason } from './tls-reason.js';

/** A server's text for one stderr line: control characters (terminal escapes) as `?`, at most 300 characters. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- a server's text must not carry terminal escapes to the terminal
  return text.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 300);
}

/** The limit in the door's 413 answer ("Request body must not exceed N bytes"), when it names one. */
function bodyLimitOf(error: HttpStatusError): number | undefined {
  const match = /must not exceed (\d+) bytes/.exec(error.detail);
  return match ? Number(match[1]) : undefined;
}

/**
 * The exit status and stderr line for a failed MCP exchange. `phase`: `connect` (before the session
 * was open) or `request` (a network failure then means the server was lost).
 * - HTTP 401/403 → 77 (`NO_PERM`), `toolwire: token refused by <url> (HTTP 401): <the server's reason>`
 *   (403: `toolwire: refused by <url> (HTTP 403): …`, e.g. a `Host` the DNS-rebinding check refuses)
 * - HTTP 413 → 64 (`USAGE`), `toolwire: input too large: the server accepts at most N bytes`
 * - HTTP 429 → 75 (`TEMPFAIL`), `toolwire: refused by <url>: <the server's reason>` (e.g. `too many
 *   failed authentications from this address; retry after 1 s`)
 * - {@link ServerLostError}, or a socket error during a request → 69, `toolwire: lost the server <url>: …`
 * - {@link NoAnswerError} → 69, naming the bound (`cannot reach server` while connecting)
 * - a socket error (refused, DNS, reset, TLS) while connecting, or any other HTTP error status →
 *   69 (`UNAVAILABLE`), `toolwire: cannot reach server <url>: …` (a TLS failure in words: {@link tlsReason})
 * - a JSON-RPC error answer or an unusable answer → 69, `toolwire: server error: …`
 * - anything else → 70 (`SOFTWARE`)
 */
export function mcpFailure(error: unknown, url: URL, phase: 'connect' | 'request' = 'connect'): { code: number; message: string } {
  const unavailable = (message: string) => ({ code: ExitCode.UNAVAILABLE, message: `toolwire: ${message}\n` });
  if (error instanceof ServerLostError) return unavailable(`lost the server ${url.href}: ${error.message}`);
  if (error instanceof NoAnswerError) {
    return error.phase === 'connect'
      ? unavailable(`cannot reach server ${url.href}: ${error.message}`)
      : unavailable(`no answer from ${url.href} within ${error.ms} ms (${error.bound}); giving up`);
  }
  if (error instanceof HttpStatusError) {
    if (error.status === 401 || error.status === 403) {
      // The server's words say what to do (make a caller token; a Host the DNS-rebinding check refuses).
      const said = error.detail === '' ? '' : `: ${printable(error.detail)}`;
      const what = error.status === 401 ? 'token refused by' : 'refused by';
      return { code: ExitCode.NO_PERM, message: `toolwire: ${what} ${url.href} (HTTP ${error.status})${said}\n` };
    }
    if (error.status === 429) {
      // The server's own words (the door names the reason: too many failed authentications from
      // this address; retry after N s); retrying later can succeed, hence EX_TEMPFAIL.
      return { code: ExitCode.TEMPFAIL, message: `toolwire: refused by ${url.href}: ${error.detail || 'HTTP 429 Too Many Requests'}\n` };
    }
    if (error.status === 413) {
      const limit = bodyLimitOf(error);
      const accepts = limit === undefined ? 'less (HTTP 413 Payload Too Large)' : `at most ${limit} bytes`;
      return { code: ExitCode.USAGE, message: `toolwire: input too large: the server accepts ${accepts}\n` };
    }
    return unavailable(`cannot reach server ${url.href}: ${error.message}`);
  }
  if (error instanceof RpcError) return unavailable(`server error: ${error.message}`);
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof Error && typeof code === 'string') {
    const why = tlsReason(error) ?? (code.startsWith('E') ? code : `${code}: ${error.message}`);
    return phase === 'request' ? unavailable(`lost the server ${url.href}: ${why}`) : unavailable(`cannot reach server ${url.href}: ${why}`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: ExitCode.SOFTWARE, message: `toolwire: ${message}\n` };
}
