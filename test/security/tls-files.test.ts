/**
 * s16-tls — the PEM files an operator names (`serve --tls-cert/--tls-key`, `host --ca`) are read
 * bounded and checked: a FIFO, `/dev/zero`, a file over 1 MiB or one without the expected PEM block
 * ends the command with 64 and one line naming the flag, at once — never a hang, never a host that
 * dials with a useless `--ca` and then says "give the CA with --ca".
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_TOKEN, cleanup, cliPath, finish, repoRoot, spawnTs, tempDir } from '../helpers.js';

const run = promisify(execFile);
const hasTools = spawnSync('openssl', ['version']).status === 0 && spawnSync('mkfifo', ['--version']).status === 0;

afterEach(cleanup);

/** A self-signed certificate and its key for 127.0.0.1 (EC P-256, one day). */
async function selfSigned(dir: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, 'server.pem');
  const key = join(dir, 'server.key');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
  return { cert, key };
}

/** Files no PEM reader should take: a FIFO (no writer), an endless device, a 2 MiB file, a folder. */
async function badFiles(dir: string): Promise<Record<string, string>> {
  const fifo = join(dir, 'fifo.pem');
  await run('mkfifo', [fifo]);
  const huge = join(dir, 'huge.pem');
  await writeFile(huge, '');
  await truncate(huge, 2 * 1024 * 1024);
  const folder = join(dir, 'folder.pem');
  await mkdir(folder);
  return { fifo, zero: '/dev/zero', huge, folder };
}

describe.skipIf(!hasTools)('TLS files named on the command line', () => {
  it('serve exits 64 at once, naming the flag, for a FIFO, /dev/zero, a 2 MiB file, a folder, or files of the wrong kind', async () => {
    const dir = await tempDir();
    const { cert, key } = await selfSigned(dir);
    const bad = await badFiles(dir);
    const encrypted = join(dir, 'encrypted.key');
    await run('openssl', ['pkcs8', '-topk8', '-in', key, '-out', encrypted, '-passout', 'pass:secret']);
    const cases: [string[], RegExp][] = [
      ...Object.values(bad).map((file): [string[], RegExp] => [['--tls-cert', file, '--tls-key', key], /--tls-cert /]),
      ...Object.values(bad).map((file): [string[], RegExp] => [['--tls-cert', cert, '--tls-key', file], /--tls-key /]),
      [['--tls-cert', key, '--tls-key', key], /--tls-cert .*holds no PEM certificate/],
      [['--tls-cert', cert, '--tls-key', cert], /--tls-key .*holds no PEM private key/],
      [['--tls-cert', cert, '--tls-key', encrypted], /--tls-key .*is encrypted \(a passphrase-protected key\); .*openssl pkey -in /],
    ];
    for (const [flags, message] of cases) {
      const result = await finish(
        spawnTs([cliPath, 'serve', '--listen', '127.0.0.1:0', '--state-dir', join(dir, 'state'), ...flags], { TOOLWIRE_HOME: dir }),
        10_000,
      );
      expect(result.code, flags.join(' ')).toBe(64);
      expect(result.stderr, flags.join(' ')).toMatch(message);
      expect(result.stdout, flags.join(' ')).not.toMatch(/listening/);
    }
  }, 120_000);

  it('host exits 64 at once for a --ca that is a FIFO, /dev/zero, a 2 MiB file, or holds no certificate (a key, an empty file)', async () => {
    const dir = await tempDir();
    const { key } = await selfSigned(dir);
    const empty = join(dir, 'empty.pem');
    await writeFile(empty, '');
    const files = [...Object.values(await badFiles(dir)), key, empty];
    for (const ca of files) {
      // The server is never dialled: the port is closed, and the --ca is refused before any dial.
      const host = spawnTs(
        [cliPath, 'host', '--server', 'wss://127.0.0.1:9', '--token', HOST_TOKEN, '--ca', ca, '--manifest', join(repoRoot, 'examples', 'tools.json')],
        { TOOLWIRE_HOME: dir },
      );
      const result = await finish(host, 10_000);
      expect(result.code, ca).toBe(64);
      expect(result.stderr, ca).toMatch(/^toolwire host: .*--ca /m);
    }
  }, 120_000);
});
