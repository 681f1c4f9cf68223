import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManifestError } from '../src/manifest/errors.js';
import { expandVars } from '../src/manifest/expand.js';
import { loadManifest, MAX_MANIFEST_BYTES } from '../src/manifest/load.js';
import { loadMcpConfig } from '../src/sources/mcp/load.js';
import { parseManifest } from '../src/manifest/parse.js';

const schema = { type: 'object', properties: { path: { type: 'string' } } };
const base = { baseDir: '/srv/tools', env: {} };

describe('parseManifest', () => {
  it('reads the basis shape with every field', () => {
    const tools = parseManifest(
      {
        schema: 1,
        tools: {
          read_file: { description: 'Read a file', input_schema: schema, command: ['cat', '--'], cwd: '/data', env: { LANG: 'C' }, timeout_ms: 5000 },
          ls: { description: 'List', input_schema: { type: 'object' }, command: ['ls'] },
        },
      },
      base,
    );
    expect(tools).toEqual([
      { name: 'read_file', description: 'Read a file', inputSchema: schema, command: ['cat', '--'], cwd: '/data', env: { LANG: 'C' }, timeoutMs: 5000 },
      { name: 'ls', description: 'List', inputSchema: { type: 'object' }, command: ['ls'] },
    ]);
  });

  it('reads the yog list form', () => {
    const tools = parseManifest([{ name: 'grep', description: 'Search', input_schema: schema, command: ['rg', '--json'], cwd: 'repo' }], base);
    expect(tools).toEqual([{ name: 'grep', description: 'Search', inputSchema: schema, command: ['rg', '--json'], cwd: '/srv/tools/repo' }]);
  });

  it('resolves a relative cwd against the manifest directory and keeps an absolute one', () => {
    const doc = (cwd: string) => ({ schema: 1, tools: { t: { description: 'd', input_schema: schema, command: ['x'], cwd } } });
    expect(parseManifest(doc('../lib'), base)[0]!.cwd).toBe('/srv/lib');
    expect(parseManifest(doc('/abs/dir'), base)[0]!.cwd).toBe('/abs/dir');
  });

  it('rejects unknown keys, naming the key path', () => {
    expect(() => parseManifest({ schema: 1, tools: {}, extra: true }, base)).toThrow(/^extra is not a known key/);
    expect(() => parseManifest({ schema: 1, tools: { t: { description: 'd', input_schema: schema, command: ['x'], shell: true } } }, base)).toThrow(
      /^tools\.t\.shell is not a known key/,
    );
    // env and timeout_ms belong to the basis shape only
    expect(() => parseManifest([{ name: 't', input_schema: schema, command: ['x'], env: {} }], base)).toThrow(/^\[0\]\.env is not a known key/);
  });

  it('reads env_passthrough as a list of variable names, strictly', () => {
    const tool = (over: Record<string, unknown>) => ({ schema: 1, tools: { t: { input_schema: schema, command: ['x'], ...over } } });
    expect(parseManifest(tool({ env_passthrough: ['SSH_AUTH_SOCK', 'CI'] }), base)[0]!.envPassthrough).toEqual(['SSH_AUTH_SOCK', 'CI']);
    expect(parseManifest(tool({}), base)[0]).not.toHaveProperty('envPassthrough');
    expect(() => parseManifest(tool({ env_passthrough: 'CI' }), base)).toThrow('tools.t.env_passthrough must be an array of variable names');
    expect(() => parseManifest(tool({ env_passthrough: ['CI', 'A-B'] }), base)).toThrow('tools.t.env_passthrough[1] is not a valid variable name');
    expect(() => parseManifest(tool({ env_passthrough: [3] }), base)).toThrow('tools.t.env_passthrough[0] is not a valid variable name');
    expect(() => parseManifest(tool({ env_passthru: ['CI'] }), base)).toThrow(/^tools\.t\.env_passthru is not a known key/);
    expect(() => parseManifest([{ name: 't', input_schema: schema, command: ['x'], env_passthrough: [] }], base)).toThrow(
      /^\[0\]\.env_passthrough is not a known key/,
    );
  });

  it('reads max_concurrency as a positive integer (basis shape only)', () => {
    const tool = (over: Record<string, unknown>) => ({ schema: 1, tools: { t: { input_schema: schema, command: ['x'], ...over } } });
    expect(parseManifest(tool({ max_concurrency: 2 }), base)[0]!.maxConcurrency).toBe(2);
    expect(parseManifest(tool({}), base)[0]).not.toHaveProperty('maxConcurrency');
    for (const bad of [0, -1, 1.5, '2', null]) {
      expect(() => parseManifest(tool({ max_concurrency: bad }), base)).toThrow('tools.t.max_concurrency must be a positive integer (calls running at once)');
    }
    expect(() => parseManifest([{ name: 't', input_schema: schema, command: ['x'], max_concurrency: 1 }], base)).toThrow(
      /^\[0\]\.max_concurrency is not a known key/,
    );
  });

  it('gives clear errors with the key path for bad values', () => {
    const tool = (over: Record<string, unknown>) => ({ schema: 1, tools: { read_file: { description: 'd', input_schema: schema, command: ['cat'], ...over } } });
    expect(() => parseManifest(tool({ command: [] }), base)).toThrow('tools.read_file.command must be a non-empty array of strings');
    expect(() => parseManifest(tool({ command: 'cat file' }), base)).toThrow('tools.read_file.command must be a non-empty array of strings');
    expect(() => parseManifest(tool({ command: ['cat', 3] }), base)).toThrow('tools.read_file.command must be a non-empty array of strings');
    expect(() => parseManifest(tool({ input_schema: { type: 'string' } }), base)).toThrow('tools.read_file.input_schema.type must be "object"');
    expect(() => parseManifest(tool({ timeout_ms: -1 }), base)).toThrow('tools.read_file.timeout_ms must be a positive integer');
    expect(() => parseManifest(tool({ env: { A: 1 } }), base)).toThrow('tools.read_file.env.A must be a string');
    expect(() => parseManifest(tool({ description: 5 }), base)).toThrow('tools.read_file.description must be a string');
    expect(() => parseManifest({ schema: 2, tools: {} }, base)).toThrow('schema must be 1');
    expect(() => parseManifest({ schema: 1, tools: { 'bad name': { input_schema: schema, command: ['x'] } } }, base)).toThrow(/invalid tool name/);
    expect(() =>
      parseManifest(
        [
          { name: 'a', input_schema: schema, command: ['x'] },
          { name: 'a', input_schema: schema, command: ['y'] },
        ],
        base,
      ),
    ).toThrow(/appears more than once/);
    expect(() => parseManifest('nope', base)).toThrow(ManifestError);
  });

  it('reads an omitted input_schema as {"type": "object"} in both forms, and still refuses a null one', () => {
    const [basis] = parseManifest({ schema: 1, tools: { now: { description: 'the time', command: ['date'] } } }, base);
    expect(basis).toEqual({ name: 'now', description: 'the time', inputSchema: { type: 'object' }, command: ['date'] });
    const [listed] = parseManifest([{ name: 'now', command: ['date'] }], base);
    expect(listed).toEqual({ name: 'now', inputSchema: { type: 'object' }, command: ['date'] });
    expect(() => parseManifest([{ name: 'now', input_schema: null, command: ['date'] }], base)).toThrow('[0].input_schema must be a JSON Schema object');
  });

  it('expands ${VAR} and ${VAR:-default} in argv, cwd and env values', () => {
    const env = { HOME: '/home/u', EMPTY: '' };
    const [tool] = parseManifest(
      {
        schema: 1,
        tools: {
          t: {
            description: 'd',
            input_schema: schema,
            command: ['${HOME}/bin/tool', '--level=${LEVEL:-3}', '${EMPTY:-fallback}', 'lit$eral'],
            cwd: '${HOME}/work',
            env: { CACHE: '${XDG_CACHE:-/tmp/cache}', PLAIN: 'x' },
          },
        },
      },
      { baseDir: '/', env },
    );
    expect(tool!.command).toEqual(['/home/u/bin/tool', '--level=3', 'fallback', 'lit$eral']);
    expect(tool!.cwd).toBe('/home/u/work');
    expect(tool!.env).toEqual({ CACHE: '/tmp/cache', PLAIN: 'x' });
  });

  it('never splits one argv element into several arguments, whatever the value holds', () => {
    const env = { EVIL: 'a b; rm -rf / $(id) `id` "q" ${HOME}' };
    const [tool] = parseManifest([{ name: 't', input_schema: schema, command: ['echo', '--x=${EVIL}'] }], { baseDir: '/', env });
    expect(tool!.command).toEqual(['echo', `--x=${env.EVIL}`]);
  });

  it('rejects an unset ${VAR} and unsupported expansion syntax, naming the element', () => {
    expect(() => parseManifest([{ name: 't', input_schema: schema, command: ['x', '${NOPE}'] }], base)).toThrow(
      /^\[0\]\.command\[1\] uses \$\{NOPE\} but NOPE is not set/,
    );
    expect(() => expandVars('${TOOLWIRE_TOKEN}', {}, 'p')).toThrow(/^p uses \$\{TOOLWIRE_TOKEN\}, which the tool host withholds on purpose/);
    expect(() => expandVars('${1}', {}, 'p')).toThrow(/unsupported expansion/);
    expect(() => expandVars('${A:=b}', { A: 'x' }, 'p')).toThrow(/unsupported expansion/);
    expect(() => expandVars('${A', { A: 'x' }, 'p')).toThrow(/unsupported expansion/);
    expect(expandVars('$A ${A:-} $', { A: '' }, 'p')).toBe('$A  $');
  });
});

describe('loadManifest', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolwire-manifest-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a file and resolves cwd against its directory', async () => {
    const file = join(dir, 'tools.json');
    await writeFile(file, JSON.stringify({ schema: 1, tools: { t: { description: 'd', input_schema: schema, command: ['${BIN:-ls}'], cwd: 'sub' } } }));
    const tools = await loadManifest(file, {});
    expect(tools).toEqual([{ name: 't', description: 'd', inputSchema: schema, command: ['ls'], cwd: join(dir, 'sub') }]);
  });

  it('expands ${TOOLWIRE_MANIFEST_DIR} to the manifest directory', async () => {
    const file = join(dir, 'dir.json');
    await writeFile(file, JSON.stringify([{ name: 't', input_schema: schema, command: ['node', '${TOOLWIRE_MANIFEST_DIR}/tools/t.mjs'] }]));
    const [tool] = await loadManifest(file, {});
    expect(tool!.command).toEqual(['node', join(dir, 'tools', 't.mjs')]);
  });

  it('reads no more than its limit of a file that never ends or is too large (/dev/zero, a FIFO-like device, a big log)', async () => {
    // Before: the whole file was read into memory and only then measured; /dev/zero never ended.
    await expect(loadManifest('/dev/zero')).rejects.toThrow(/^manifest \/dev\/zero: cannot read: larger than 4194304 bytes$/);
    await expect(loadMcpConfig('/dev/zero')).rejects.toThrow(/^manifest \/dev\/zero: cannot read an MCP config: larger than 4194304 bytes$/);
    const big = join(dir, 'big.json');
    await writeFile(big, Buffer.alloc(MAX_MANIFEST_BYTES + 1, 0x20));
    await expect(loadManifest(big)).rejects.toThrow(/big\.json: cannot read: larger than 4194304 bytes$/);
    const atLimit = join(dir, 'at-limit.json');
    await writeFile(atLimit, `[]${' '.repeat(MAX_MANIFEST_BYTES - 2)}`);
    await expect(loadManifest(atLimit)).resolves.toEqual([]);
  });

  it('refuses a manifest or MCP config with a key given twice in one object (JSON would keep only the last: a silent shadow)', async () => {
    const tool = `{"input_schema": {"type": "object"}, "command": ["ls"]}`;
    const twice = join(dir, 'twice.json');
    await writeFile(twice, `{"schema": 1,\n "tools": {\n  "ls": ${tool},\n  "ls": ${tool}\n }\n}`);
    await expect(loadManifest(twice, {})).rejects.toThrow(/twice\.json: tools\.ls is given twice in one object \(line 4\): JSON keeps only the last$/);
    const servers = join(dir, 'servers-twice.json');
    await writeFile(servers, `{"mcpServers": {"fs": {"command": "a"}, "web": {"url": "http://127.0.0.1:1/mcp"}, "fs": {"command": "b"}}}`);
    await expect(loadMcpConfig(servers, {})).rejects.toThrow(/servers-twice\.json: mcpServers\.fs is given twice in one object \(line 1\)/);
    const nested = join(dir, 'nested.json');
    // Spelled differently, the same key: an escape decodes to the letter it names.
    await writeFile(nested, `[{"name": "t", "input_schema": {"type": "object"}, "command": ["ls"], "cwd": "/a", "c\\u0077d": "/b"}]`);
    await expect(loadManifest(nested, {})).rejects.toThrow(/nested\.json: \[0\]\.cwd is given twice in one object/);
    // The same key in two different objects is not a repeat.
    const fine = join(dir, 'fine.json');
    await writeFile(fine, `{"schema": 1, "tools": {"a": ${tool}, "b": ${tool}}}`);
    await expect(loadManifest(fine, {})).resolves.toHaveLength(2);
  });

  it('names the file in errors for unreadable, non-JSON and invalid manifests', async () => {
    await expect(loadManifest(join(dir, 'missing.json'))).rejects.toThrow(/^manifest .*missing\.json: cannot read/);
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{ nope');
    await expect(loadManifest(bad)).rejects.toThrow(/^manifest .*bad\.json: not valid JSON/);
    const invalid = join(dir, 'invalid.json');
    await writeFile(invalid, JSON.stringify({ schema: 1, tools: { t: { input_schema: schema, command: [] } } }));
    await expect(loadManifest(invalid)).rejects.toThrow(/invalid\.json: tools\.t\.command must be a non-empty array of strings$/);
  });
});
