/**
 * `readBounded` (manifests, MCP configs) on files that are not regular: a FIFO nobody writes to is
 * refused at once, a pipe whose writer stalls is refused after the wait bound, and a pipe that writes
 * too much is refused by size — never a wait without end. Real FIFOs (mkfifo); the test holds the
 * writer end itself (`O_RDWR`, which does not wait for a reader on Linux).
 */
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBounded } from '../src/manifest/read-bounded.js';
import { loadManifest } from '../src/manifest/load.js';

let dir: string;
const writers: FileHandle[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-read-bounded-'));
});
afterEach(async () => {
  for (const w of writers.splice(0)) await w.close();
  await rm(dir, { recursive: true, force: true });
});

function fifo(name: string): string {
  const path = join(dir, name);
  execFileSync('mkfifo', [path]);
  return path;
}

/** Hold a writer on the FIFO at `path` (it also counts as a reader, so the open does not wait). */
async function holdWriter(path: string): Promise<FileHandle> {
  const w = await open(path, constants.O_RDWR | constants.O_NONBLOCK);
  writers.push(w);
  return w;
}

describe('readBounded on a FIFO or pipe', () => {
  it('refuses a FIFO that no process writes to at once, naming why, instead of waiting for a writer', async () => {
    const path = fifo('no-writer.json');
    const started = Date.now();
    await expect(readBounded(path, 1024)).rejects.toThrow(/^a FIFO or pipe that no process writes to \(nothing to read\)$/);
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(loadManifest(path, {})).rejects.toThrow(/^manifest .*no-writer\.json: cannot read: a FIFO or pipe that no process writes to \(nothing to read\)$/);
  }, 5_000);

  it('refuses a pipe whose writer stays open but does not finish within the wait bound', async () => {
    const path = fifo('stalled.json');
    const w = await holdWriter(path);
    await w.write('{"schema": 1, ');
    await expect(readBounded(path, 1024, 200)).rejects.toThrow(/^its writer did not finish within 200 ms$/);
  }, 5_000);

  it('refuses a pipe that writes more than the limit by size, without waiting for its end', async () => {
    const path = fifo('flood.json');
    const w = await holdWriter(path);
    await w.write(Buffer.alloc(2048, 0x20));
    await expect(readBounded(path, 1024, 60_000)).rejects.toThrow(/^larger than 1024 bytes$/);
  }, 5_000);
});

describe('readBounded on a regular file or device', () => {
  it('refuses a regular file over the limit by its size, without reading it (a sparse 1 TiB file)', async () => {
    const path = join(dir, 'huge.json');
    await writeFile(path, '');
    await truncate(path, 2 ** 40);
    const started = Date.now();
    await expect(readBounded(path, 4 * 1024 * 1024)).rejects.toThrow(/^larger than 4194304 bytes$/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('still refuses /dev/zero by size and reads a file at the limit', async () => {
    await expect(readBounded('/dev/zero', 1024)).rejects.toThrow(/^larger than 1024 bytes$/);
    const path = join(dir, 'at-limit.json');
    await writeFile(path, Buffer.alloc(1024, 0x20));
    expect((await readBounded(path, 1024)).length).toBe(1024);
  });
});
