/** Where the caller commands reach the server's MCP door. */
import { withDefaultScheme } from '../endpoint.js';
import { quotedArg } from '../terminal-text.js';

/**
 * The MCP door URL for `server`: `ws://h:p[/…]` → `http://h:p/mcp` (`wss` → `https`);
 * `http(s)://h:p` or `http(s)://h:p/` → `…/mcp`; any other http(s) path is kept; `h:p` without a
 * scheme is taken as `http://h:p`; `h` with neither a scheme nor a port is refused.
 *
 * @throws TypeError for anything that is not a ws/wss/http/https URL, or that has neither a scheme nor a port
 */
export function mcpUrl(server: string): URL {
  const withScheme = withDefaultScheme(server, 'http');
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new TypeError(`not a URL: ${quotedArg(server)}`);
  }
  if (url.protocol === 'ws:' || url.protocol === 'wss:') {
    url = new URL(`${url.protocol === 'wss:' ? 'https:' : 'http:'}//${url.host}/mcp`);
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`not a ws://, wss://, http:// or https:// URL: ${quotedArg(server)}`);
  } else if (url.pathname === '/' || url.pathname === '') {
    url.pathname = '/mcp';
  }
  return url;
}
