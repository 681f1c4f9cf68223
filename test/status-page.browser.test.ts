/**
 * The status page in a real browser (issue 16): headless Chromium from Debian's packages
 * (`/usr/bin/chromium`, installed by `.ci/run` where missing), driven by `playwright-core` — never
 * a downloaded browser. A real server, a real tool-host process with a streaming subprocess tool.
 * Screenshots go to `test/artifacts/` (gitignored).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, startHost, startServer } from '@toolwire/testing';
import { cleanup, defer, repoRoot } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot, 'test', 'artifacts');
const LIVE_HOST = join(repoRoot, 'test', 'fixtures', 'live-tools.json');
const READONLY_TOKEN = 'caller-token-readonly-dddddddddddddddd';

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  browser = await chromium.launch({ executablePath: CHROMIUM });
  await mkdir(ARTIFACTS, { recursive: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await cleanup();
  await closeAll();
});

/** A kit server with its caller `agent` (grant all) and `viewer` (grant: alpha__echo only), and the live host `alpha`. */
async function setup() {
  const started = await startServer({
    callers: [{ name: 'viewer', token: READONLY_TOKEN, grant: ['alpha__echo'] }],
    cancelGraceMs: 2_000,
  });
  await startHost(started, LIVE_HOST, { name: 'alpha', process: true, hostOptions: { reconnect: false } });
  const base = started.url.replace(/^ws/, 'http');
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  defer(() => context.close());
  return { started, base, context, page: await context.newPage() };
}

describe('the status page in Chromium', () => {
  it('refuses an unauthenticated visit: the login form, a 401, and no data from the feed or the snapshot', async () => {
    const { base, page } = await setup();
    const response = await page.goto(`${base}/status`);
    expect(response?.status()).toBe(401);
    await expect(page.getByLabel('Caller token').isVisible()).resolves.toBe(true);
    expect(await page.locator('#hosts').count()).toBe(0);
    const feed = await page.evaluate(async () => (await fetch('/status/events')).status);
    const snapshot = await page.evaluate(async () => (await fetch('/status/snapshot')).status);
    expect([feed, snapshot]).toEqual([401, 401]);
    // A wrong token is refused and shows why.
    await page.getByLabel('Caller token').fill('not-a-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not a caller token/);
    await page.screenshot({ path: join(ARTIFACTS, 'status-login.png') });
  });

  it('logs in, shows the host and its tools, shows a slow call live and stops it: exit 130', async () => {
    const { started, base, context, page } = await setup();
    await page.goto(`${base}/status`);
    // Keyboard only: type the token, press Enter.
    await page.getByLabel('Caller token').focus();
    await page.keyboard.type(started.callerToken);
    await page.keyboard.press('Enter');
    const host = page.getByRole('article', { name: 'host alpha' });
    await host.waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'toolwire_status');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/status' });
    expect(cookie?.value).not.toContain(started.callerToken);
    await expect(host.getByText('127.0.0.1').isVisible()).resolves.toBe(true);
    const tools = host.getByRole('list', { name: 'tools of alpha' });
    for (const tool of ['alpha__echo', 'alpha__ticker', 'alpha__forever']) await tools.getByText(tool, { exact: true }).waitFor();
    await expect(page.locator('#live').textContent()).resolves.toBe('live');

    // A slow call appears, with its output bytes growing.
    const call = started.server.executor.execute({ id: 'slow-call-1', name: 'alpha__forever', input: {}, agent: 'agent' });
    const row = page.locator('#calls tr', { hasText: 'slow-call-1' });
    await row.waitFor({ timeout: 10_000 });
    await expect(row.textContent()).resolves.toContain('alpha__forever');
    await page.locator('#calls td[data-label="Output"]', { hasText: /^[1-9]\d*(\.\d)? (B|KiB|MiB)$/ }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(ARTIFACTS, 'status-running.png'), fullPage: true });

    // Stop it from the page (keyboard: focus the button, press Enter): it ends 130.
    await row.getByRole('button', { name: /Stop call slow-call-1/ }).focus();
    await page.keyboard.press('Enter');
    const result = await call;
    expect(result.outcome).toBe('completed');
    expect(result.outcome === 'completed' && result.capture.exitCode).toBe(130);
    const finished = page.locator('#recent tr', { hasText: 'slow-call-1' });
    await finished.waitFor({ timeout: 10_000 });
    await expect(finished.locator('[data-exit]').getAttribute('data-exit')).resolves.toBe('130');
    await expect(page.locator('#calls').textContent()).resolves.toContain('No calls in flight');
    await page.screenshot({ path: join(ARTIFACTS, 'status-stopped.png'), fullPage: true });
  });

  it('offers no stop button to a caller whose grant does not allow the tool, and the server refuses the stop too', async () => {
    const { started, base, page } = await setup();
    await page.goto(`${base}/status`);
    await page.getByLabel('Caller token').fill(READONLY_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    const call = started.server.executor.execute({ id: 'slow-call-2', name: 'alpha__forever', input: {}, agent: 'agent' });
    const row = page.locator('#calls tr', { hasText: 'slow-call-2' });
    await row.waitFor({ timeout: 10_000 });
    await expect(row.getByRole('button').count()).resolves.toBe(0);
    await expect(row.textContent()).resolves.toContain('not granted');
    const status = await page.evaluate(async () => {
      const res = await fetch('/status/stop', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'slow-call-2', agent: 'agent' }),
      });
      return res.status;
    });
    expect(status).toBe(403);
    expect(started.server.executor.stop('agent')).toBe(1);
    await expect(call).resolves.toMatchObject({ capture: { exitCode: 130 } });
  });

  it('is readable at 320 px wide: no horizontal scrolling', async () => {
    const { started, base, page } = await setup();
    await page.setViewportSize({ width: 320, height: 800 });
    await page.goto(`${base}/status`);
    await page.getByLabel('Caller token').fill(started.callerToken);
    await page.getByRole('button', { name: 'Log in' }).click();
    const call = started.server.executor.execute({ id: 'narrow-call', name: 'alpha__forever', input: {}, agent: 'agent' });
    await page.locator('#calls tr', { hasText: 'narrow-call' }).waitFor({ timeout: 10_000 });
    const widths = await page.evaluate<{ scroll: number; client: number }>(
      '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
    );
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    await page.screenshot({ path: join(ARTIFACTS, 'status-320px.png'), fullPage: true });
    started.server.executor.stop('agent');
    await call;
  });
});
