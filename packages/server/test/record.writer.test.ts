import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordWriter } from '../src/executor/record-writer.js';

let root: string;
let writer: RecordWriter;

afterEach(async () => {
  await writer?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function setup(): Promise<void> {
  root = await mkdtemp(join(tmpdir(), 'toolwire-writer-'));
  writer = new RecordWriter();
}

describe('record writer (worker thread, batched)', () => {
  it('writes many files at once, each complete, mode 0600 in a 0700 directory, no temp file left', async () => {
    await setup();
    const writes = Array.from({ length: 200 }, (_, i) => {
      const dir = join(root, 'a', `c${i}`);
      return writer.write({ path: join(dir, 'input.json'), text: `{"n":${i}}\n`, dir, mkdir: 'always' });
    });
    await Promise.all(writes);
    for (const i of [0, 99, 199]) {
      const dir = join(root, 'a', `c${i}`);
      expect(await readFile(join(dir, 'input.json'), 'utf8')).toBe(`{"n":${i}}\n`);
      expect(await readdir(dir)).toEqual(['input.json']);
      expect((await stat(join(dir, 'input.json'))).mode & 0o777).toBe(0o600);
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
    }
  });

  it('rejects a write whose directory does not exist with ENOENT, and makes it when asked to', async () => {
    await setup();
    const dir = join(root, 'x', 'y');
    await expect(writer.write({ path: join(dir, 'output.json'), text: '{}\n' })).rejects.toMatchObject({ code: 'ENOENT' });
    await writer.write({ path: join(dir, 'output.json'), text: '{}\n', dir, mkdir: 'missing' });
    expect(await readFile(join(dir, 'output.json'), 'utf8')).toBe('{}\n');
  });

  it('fails one write without failing the others of its batch', async () => {
    await setup();
    const good = writer.write({ path: join(root, 'good.json'), text: '1\n' });
    const bad = writer.write({ path: join(root, 'missing', 'bad.json'), text: '2\n' });
    const also = writer.write({ path: join(root, 'also.json'), text: '3\n' });
    await expect(bad).rejects.toMatchObject({ code: 'ENOENT' });
    await good;
    await also;
    expect((await readdir(root)).sort()).toEqual(['also.json', 'good.json']);
  });

  it('writes byte contents beside text ones in one batch: a whole buffer is handed over, a slice copied', async () => {
    await setup();
    const owned = Buffer.allocUnsafeSlow(70_000).fill(0x61);
    const slice = Buffer.from('a pooled slice: "x" \u0000 é\n'); // a view into Node's shared pool, not transferable
    const writes = [
      writer.write({ path: join(root, 'text.json'), text: '"t"\n' }),
      writer.write({ path: join(root, 'owned.json'), text: 'ignored', bytes: owned }),
      writer.write({ path: join(root, 'slice.json'), text: '', bytes: slice }),
      writer.write({ path: join(root, 'after.json'), text: '"a"\n' }),
    ];
    await Promise.all(writes);
    expect(owned.length).toBe(0); // transferred to the thread, not copied
    expect(await readFile(join(root, 'owned.json'))).toEqual(Buffer.alloc(70_000, 0x61));
    expect(await readFile(join(root, 'slice.json'))).toEqual(slice);
    expect(await readFile(join(root, 'text.json'), 'utf8')).toBe('"t"\n');
    expect(await readFile(join(root, 'after.json'), 'utf8')).toBe('"a"\n');
  });

  it('rejects writes after close', async () => {
    await setup();
    await writer.write({ path: join(root, 'one.json'), text: '1\n' });
    await writer.close();
    await expect(writer.write({ path: join(root, 'two.json'), text: '2\n' })).rejects.toThrow('closed');
  });
});

describe('record writer fields', () => {
  it('refuses a file whose text holds a NUL (the batch encoding separates fields with it)', async () => {
    await setup();
    await expect(writer.write({ path: join(root, 'nul.json'), text: 'a\0b' })).rejects.toThrow(TypeError);
    await writer.write({ path: join(root, 'ok.json'), text: JSON.stringify({ s: 'a\0b' }) });
    expect(JSON.parse(await readFile(join(root, 'ok.json'), 'utf8'))).toEqual({ s: 'a\0b' });
  });
});

describe('record writer and the process', () => {
  it('keeps the process alive while a write is in flight, and lets it exit once idle', async () => {
    await setup();
    const { execFile } = await import('node:child_process');
    const module = new URL('../src/executor/record-writer.ts', import.meta.url).href;
    const path = join(root, 'alive.json');
    // Nothing else holds the event loop: the write alone must keep it running until the file is in place.
    const script = `import(${JSON.stringify(module)}).then(({ RecordWriter }) => { void new RecordWriter().write({ path: ${JSON.stringify(path)}, text: 'done\\n' }); });`;
    await new Promise<void>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', '-e', script], { timeout: 60_000 }, (error) => (error ? reject(new Error(error.message)) : resolve())),
    );
    expect(await readFile(path, 'utf8')).toBe('done\n');
  });
});
