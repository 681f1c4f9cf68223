/**
 * Issue 11 §2 — the server reads its open-files limit, sizes its connection defaults from it and
 * says so in the log; the new limits are options, checked at once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import { ServerDefaults } from '../src/defaults.js';
import { FALLBACK_OPEN_FILES, type OpenFilesLimit, parseOpenFilesLimit, readOpenFilesLimit, sizeFromOpenFiles } from '../src/preauth/fd-limit.js';
import { ToolwireServer } from '../src/toolwire-server.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            256                  4096                 files
Max locked memory         8388608              8388608              bytes
`;

/** A logger that keeps every line. */
function recorder(): Logger & { lines: { level: string; obj: Record<string, unknown>; msg: string }[] } {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (obj: unknown, msg?: string) => void lines.push({ level, obj: (obj ?? {}) as Record<string, unknown>, msg: msg ?? '' });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as never;
}

const servers: ToolwireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('reading the open-files limit', () => {
  it('parses the soft "Max open files" of /proc/<pid>/limits (unlimited → Infinity; no line → undefined)', () => {
    expect(parseOpenFilesLimit(LIMITS)).toBe(256);
    expect(parseOpenFilesLimit(LIMITS.replace('256                  4096', 'unlimited            unlimited'))).toBe(Infinity);
    expect(parseOpenFilesLimit('Max cpu time unlimited unlimited seconds\n')).toBeUndefined();
    expect(parseOpenFilesLimit('Max open files  zero  4096  files\n')).toBeUndefined();
  });

  it.runIf(existsSync('/proc/self/limits'))('reads this process’s limit from /proc/self/limits', () => {
    const expected = parseOpenFilesLimit(readFileSync('/proc/self/limits', 'utf8'));
    expect(readOpenFilesLimit()).toEqual({ limit: expected, source: '/proc/self/limits' });
  });

  it('falls back to 1024 with the reason when the file cannot be read', () => {
    const read = readOpenFilesLimit('/nonexistent/limits');
    expect(read).toEqual({ limit: FALLBACK_OPEN_FILES, source: 'fallback', why: 'cannot read /nonexistent/limits: ENOENT' });
    expect(FALLBACK_OPEN_FILES).toBe(1024);
  });
});

describe('defaults sized from the limit', () => {
  it('gives unauthenticated connections an eighth of (limit − 64), each address a quarter of that, host connections half', () => {
    expect(sizeFromOpenFiles(1024)).toEqual({ maxPreAuthConnections: 120, maxPreAuthPerAddress: 30, maxConnections: 480 });
    expect(sizeFromOpenFiles(256)).toEqual({ maxPreAuthConnections: 24, maxPreAuthPerAddress: 6, maxConnections: 96 });
    expect(sizeFromOpenFiles(Infinity)).toEqual({ maxPreAuthConnections: 1024, maxPreAuthPerAddress: 64, maxConnections: 1024 });
    expect(sizeFromOpenFiles(20)).toEqual({ maxPreAuthConnections: 8, maxPreAuthPerAddress: 2, maxConnections: 8 });
  });

  it('keeps the pre-auth caps far below the limit and leaves authenticated room, for every limit', () => {
    for (const limit of [64, 100, 256, 512, 1024, 4096, 65536, 1048576]) {
      const d = sizeFromOpenFiles(limit);
      expect(d.maxPreAuthConnections).toBeLessThanOrEqual(Math.max(8, limit / 8));
      expect(d.maxPreAuthPerAddress).toBeLessThanOrEqual(d.maxPreAuthConnections);
      if (limit >= 256) expect(d.maxPreAuthConnections + d.maxConnections + 64).toBeLessThanOrEqual(limit);
      expect(d.maxConnections).toBeLessThanOrEqual(ServerDefaults.maxConnections);
    }
  });

  it('applies the sized defaults unless an option is given, and names the sized ones', () => {
    const low = (): OpenFilesLimit => ({ limit: 256, source: '/proc/self/limits' });
    const config = resolveServerConfig({}, { openFilesLimit: low });
    expect(config.preAuth).toMatchObject({ maxConnections: 24, maxPerAddress: 6, timeoutMs: 10_000 });
    expect(config.endpoint.maxConnections).toBe(96);
    expect(config.descriptors.sized).toEqual(['maxPreAuthConnections', 'maxPreAuthPerAddress', 'maxConnections']);
    const given = resolveServerConfig({ maxPreAuthConnections: 7, maxConnections: 3 }, { openFilesLimit: low });
    expect(given.preAuth).toMatchObject({ maxConnections: 7, maxPerAddress: 6 });
    expect(given.endpoint.maxConnections).toBe(3);
    expect(given.descriptors.sized).toEqual(['maxPreAuthPerAddress']);
  });

  it('passes the node:http knobs through with their defaults', () => {
    expect(resolveServerConfig({}).http).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 5_000,
      maxHeaderBytes: 16 * 1024,
      maxHeadersCount: 100,
    });
  });
});

describe('checking the new options', () => {
  const keys = [
    'maxPreAuthConnections',
    'maxPreAuthPerAddress',
    'preAuthTimeoutMs',
    'headersTimeoutMs',
    'requestTimeoutMs',
    'keepAliveTimeoutMs',
    'maxHeaderBytes',
    'maxHeadersCount',
  ] as const;
  it.each(keys)('%s must be a positive integer (RangeError at once)', (key) => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new ToolwireServer({ [key]: bad })).toThrow(RangeError);
  });

  it('refuses headersTimeoutMs above requestTimeoutMs', () => {
    expect(() => new ToolwireServer({ headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).toThrow(
      /headersTimeoutMs \(2000\) must not exceed requestTimeoutMs \(1000\)/,
    );
  });
});

describe('the start log', () => {
  it('says the limit, where it came from and the caps sized from it, at listen', async () => {
    const logger = recorder();
    const server = new ToolwireServer({ logger }, { openFilesLimit: () => ({ limit: 256, source: '/proc/self/limits' }) });
    servers.push(server);
    expect(logger.lines).toEqual([]);
    await server.listen(0, '127.0.0.1');
    const line = logger.lines.find((l) => l.msg.startsWith('open-files limit'));
    expect(line?.level).toBe('info');
    expect(line?.msg).toBe(
      'open-files limit 256 from /proc/self/limits: unauthenticated connections at most 24 (6 per address), host connections at most 96 ' +
        '(sized from it: maxPreAuthConnections, maxPreAuthPerAddress, maxConnections)',
    );
    expect(line?.obj).toMatchObject({ openFiles: 256, maxPreAuthConnections: 24, maxPreAuthPerAddress: 6, maxConnections: 96 });
    expect(logger.lines.some((l) => l.level === 'warn')).toBe(false);
  });

  it('says when the limit was assumed, and warns when the caps given do not fit the limit', async () => {
    const logger = recorder();
    const fallback = (): OpenFilesLimit => ({ limit: 1024, source: 'fallback', why: 'cannot read /proc/self/limits: ENOENT' });
    const server = new ToolwireServer({ logger, maxConnections: 1000 }, { openFilesLimit: fallback });
    servers.push(server);
    await server.listen(0, '127.0.0.1');
    expect(logger.lines.find((l) => l.msg.startsWith('open-files limit'))?.msg).toBe(
      'open-files limit 1024 assumed (cannot read /proc/self/limits: ENOENT): unauthenticated connections at most 120 (30 per address), ' +
        'host connections at most 1000 (sized from it: maxPreAuthConnections, maxPreAuthPerAddress)',
    );
    const warn = logger.lines.find((l) => l.level === 'warn');
    expect(warn?.msg).toMatch(/^open-files limit 1024 is below maxConnections \+ maxPreAuthConnections \+ 64 \(1184\): raise it/);
  });
});
