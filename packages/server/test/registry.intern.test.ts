/** Equal tool specs of many hosts are kept once (registry/intern.ts), and change detection still sees every change. */
import { describe, expect, it } from 'vitest';
import { resolveServerConfig } from '../src/config.js';
import { ToolRegistry } from '../src/registry/registry.js';

const registry = (): ToolRegistry => new ToolRegistry(resolveServerConfig({}).router);
/** A spec as a host's frame brings it: fresh objects every time. */
const spec = (name: string, description = 'reads a file', extra: Record<string, unknown> = {}) =>
  JSON.parse(
    JSON.stringify({ name, description, inputSchema: { type: 'object', properties: { path: { type: 'string' }, ...extra }, required: ['path'] } }),
  ) as unknown;

describe('tool spec interning', () => {
  it('gives hosts that advertise equal specs one shared schema object', () => {
    const r = registry();
    r.replace('a', [spec('read'), spec('write', 'writes a file')]);
    r.replace('b', [spec('read'), spec('write', 'writes a file')]);
    const [aRead, aWrite, bRead, bWrite] = r.list();
    expect(bRead!.name).toBe('b__read');
    expect(bRead!.inputSchema).toBe(aRead!.inputSchema);
    expect(bWrite!.inputSchema).toBe(aWrite!.inputSchema);
    expect(aRead!.inputSchema).not.toBe(aWrite!.inputSchema); // same schema text, other name and description: its own spec
    expect(aWrite!.description).toBe('writes a file');
  });

  it('keeps specs that differ in name, description or schema apart', () => {
    const r = registry();
    r.replace('a', [spec('read')]);
    r.replace('b', [spec('read', 'reads a file, fast')]);
    r.replace('c', [spec('read', 'reads a file', { limit: { type: 'integer' } })]);
    const [a, b, c] = r.list();
    expect(b!.inputSchema).not.toBe(a!.inputSchema);
    expect(b!.description).toBe('reads a file, fast');
    expect(c!.inputSchema).not.toBe(a!.inputSchema);
    expect(c!.inputSchema).toEqual({ type: 'object', properties: { path: { type: 'string' }, limit: { type: 'integer' } }, required: ['path'] });
  });

  it('reports a change only when the set changed', () => {
    const r = registry();
    expect(r.replace('a', [spec('read')]).changed).toBe(true);
    expect(r.replace('a', [spec('read')]).changed).toBe(false); // equal, from a fresh frame
    expect(r.replace('a', [spec('read', 'other words')]).changed).toBe(true);
    expect(r.replace('a', [spec('read', 'other words', { n: { type: 'number' } })]).changed).toBe(true);
    expect(r.replace('a', [spec('read', 'other words', { n: { type: 'number' } }), spec('list')]).changed).toBe(true);
    expect(r.replace('a', [spec('list'), spec('read', 'other words', { n: { type: 'number' } })]).changed).toBe(true); // order
    expect(r.replace('a', []).changed).toBe(true);
    expect(r.replace('a', []).changed).toBe(false);
  });
});
