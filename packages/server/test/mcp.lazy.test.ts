import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TokenTable } from '../src/auth/tokens.js';
import { McpDoor } from '../src/mcp/door.js';
import { type McpSdk, sdkLoader } from '../src/mcp/sdk.js';
import { resolveServerConfig } from '../src/config.js';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const sdkFailures = vi.hoisted(() => ({ remaining: 0 }));

// The door's loader, made to fail `sdkFailures.remaining` times before importing the real SDK.
vi.mock('../src/mcp/sdk.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/mcp/sdk.js')>();
  return {
    ...actual,
    loadMcpSdk: actual.sdkLoader(async () => {
      if (sdkFailures.remaining > 0) {
        sdkFailures.remaining--;
        throw new Error('simulated SDK import failure');
      }
      return actual.loadMcpSdk();
    }),
  };
});

const fakeSdk = {} as McpSdk;

describe('sdkLoader', () => {
  it('imports once for concurrent callers and reuses the result', async () => {
    const importSdk = vi.fn(async () => fakeSdk);
    const load = sdkLoader(importSdk);
    const all = await Promise.all([load(), load(), load()]);
    expect(all.every((sdk) => sdk === fakeSdk)).toBe(true);
    expect(await load()).toBe(fakeSdk);
    expect(importSdk).toHaveBeenCalledTimes(1);
  });

  it('rejects every waiter of a failed import and tries again on the next call', async () => {
    const importSdk = vi.fn().mockRejectedValueOnce(new Error('boom')).mockResolvedValue(fakeSdk);
    const load = sdkLoader(importSdk);
    const first = await Promise.allSettled([load(), load()]);
    expect(first.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await load()).toBe(fakeSdk);
    expect(importSdk).toHaveBeenCalledTimes(2);
  });
});

describe('importing @toolwire/server', () => {
  /** SDK modules resolved while a fresh node process (tsx) imports `module` and runs `then`. */
  async function sdkModulesLoadedBy(module: string, then: string): Promise<string[]> {
    // A resolve hook that prints every SDK module resolved, registered from an --import module.
    const hook =
      "export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.includes('@modelcontextprotocol')) console.error('SDK ' + r.url); return r; }";
    const registrar = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`)}`;
    const url = new URL(module, import.meta.url).href;
    const script = `const m = await import(${JSON.stringify(url)}); ${then}; console.log('loaded');`;
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, '--import', registrar, '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      timeout: 30_000,
    });
    expect(stdout.trim()).toBe('loaded');
    return stderr.split('\n').filter((line) => line.startsWith('SDK '));
  }

  it('does not load the MCP SDK, also when a ToolwireServer is made', async () => {
    expect(await sdkModulesLoadedBy('../src/index.ts', 'new m.ToolwireServer()')).toEqual([]);
  });

  it('is checked by a probe that does see the SDK when a module loads it', async () => {
    expect((await sdkModulesLoadedBy('../src/mcp/mcp-server.ts', '')).length).toBeGreaterThan(0);
  });
});

describe('McpDoor with a lazily loaded SDK', () => {
  let http: HttpServer | undefined;
  let door: McpDoor | undefined;

  afterEach(async () => {
    await door?.close();
    http?.closeAllConnections();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
  });

  it('answers 500 when the SDK fails to load and opens the session on the next request', async () => {
    const options = resolveServerConfig();
    const tools = Object.assign(new EventEmitter(), { tools: () => [] });
    const tokens = new TokenTable([], [{ name: 'alice', token: 'alice-token-123' }]);
    const executor = { execute: () => Promise.reject(new Error('unused')) };
    door = new McpDoor({ executor, tools, auth: tokens, options: options.mcp });
    const d = door;
    http = createServer((req, res) => void d.handle(req, res));
    await new Promise<void>((resolve) => http?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    const initialize = (): Promise<Response> =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer alice-token-123' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });

    sdkFailures.remaining = 1;
    const failed = await initialize();
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    expect(door.sessionCount).toBe(0);

    const ok = await initialize();
    expect(ok.status).toBe(200);
    expect(ok.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    await ok.text();
    expect(door.sessionCount).toBe(1);
  });
});
