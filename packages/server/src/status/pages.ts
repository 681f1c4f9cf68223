/**
 * The status page's documents: the login form and the page shell (HTML built here, small), and its
 * script and style sheet (plain files in `page/`, read once, served as they are: no build step).
 */
import { readFileSync } from 'node:fs';

/** Security headers of every status response: no framing, no inline script, nothing cached or sniffed. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin', // not no-referrer: Chromium then sends `Origin: null` on the page's own POSTs
  'cache-control': 'no-store',
});

/** Files of `page/` served at `/status/<name>`, with their types. */
export const ASSETS: Readonly<Record<string, string>> = Object.freeze({
  'status.js': 'text/javascript; charset=utf-8',
  'status.css': 'text/css; charset=utf-8',
});

const cache = new Map<string, Buffer>();

/** The bytes of asset `name` (one of {@link ASSETS}), read once. @throws when the file is missing (a broken install). */
export function asset(name: string): Buffer {
  let bytes = cache.get(name);
  if (bytes === undefined) {
    bytes = readFileSync(new URL(`./page/${name}`, import.meta.url));
    cache.set(name, bytes);
  }
  return bytes;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function document(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/status/status.css">
</head>
<body>
${body}
</body>
</html>
`;
}

/** The login form; `problem` (why the last attempt failed) is shown in an alert. */
export function loginPage(problem?: string): string {
  const alert = problem === undefined ? '' : `<p class="problem" role="alert">${escapeHtml(problem)}</p>\n`;
  return document(
    'toolwire status: log in',
    `<main class="login">
<h1>toolwire status</h1>
${alert}<form method="post" action="/status/login">
<label for="token">Caller token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="hint">The token is checked once; the browser keeps only a session cookie (HttpOnly, SameSite=Strict).</p>
</main>`,
  );
}

/** The status page shell; `status.js` fills it from the live feed. */
export function statusPage(caller: string): string {
  return document(
    'toolwire status',
    `<header>
<h1>toolwire status</h1>
<p>Signed in as <strong>${escapeHtml(caller)}</strong> · <span id="live" role="status">connecting…</span></p>
<form method="post" action="/status/logout"><button type="submit">Log out</button></form>
</header>
<main>
<section aria-labelledby="hosts-h"><h2 id="hosts-h">Hosts <span class="count" id="hosts-n"></span></h2><div id="hosts"></div></section>
<section aria-labelledby="calls-h"><h2 id="calls-h">Calls in flight <span class="count" id="calls-n"></span></h2><div id="calls"></div></section>
<section aria-labelledby="recent-h"><h2 id="recent-h">Recent calls</h2><div id="recent"></div></section>
</main>
<script src="/status/status.js"></script>`,
  );
}
