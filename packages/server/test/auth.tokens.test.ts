import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';

// Count constant-time comparisons while keeping the real implementation.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});

const { timingSafeEqual } = await import('node:crypto');
const { TokenTable } = await import('../src/auth/tokens.js');

const hosts = [
  { name: 'alpha', token: 'tok-alpha' },
  { name: 'beta_1', token: 'tok-beta' },
];
const callers = [
  { name: 'agent', token: 'tok-agent' },
  { name: 'ci', token: 'tok-ci', grant: ['alpha__read'] },
];

describe('TokenTable.authenticate', () => {
  const table = new TokenTable(hosts, callers);

  it('maps a host bearer token to its host identity', () => {
    expect(table.authenticate('Bearer tok-alpha', 'host')).toEqual({ role: 'host', name: 'alpha' });
    expect(table.authenticate('Bearer tok-beta', 'host')).toEqual({ role: 'host', name: 'beta_1' });
  });

  it('maps a caller token to its agent name and grant (default ["*"])', () => {
    expect(table.authenticate('Bearer tok-agent', 'caller')).toEqual({ role: 'caller', name: 'agent', grant: ['*'] });
    expect(table.authenticate('Bearer tok-ci', 'caller')).toEqual({ role: 'caller', name: 'ci', grant: ['alpha__read'] });
  });

  it('refuses a valid token of the wrong role', () => {
    expect(table.authenticate('Bearer tok-alpha', 'caller')).toBeUndefined();
    expect(table.authenticate('Bearer tok-agent', 'host')).toBeUndefined();
  });

  it('refuses a missing, malformed or unknown Authorization value', () => {
    for (const header of [undefined, '', 'Bearer', 'Bearer ', 'Basic tok-alpha', 'tok-alpha', 'Bearer tok-alpha extra', 'Bearer tok-alph', 'Bearer tok-alphaX']) {
      expect(table.authenticate(header, 'host')).toBeUndefined();
    }
  });

  it('accepts the Bearer scheme case-insensitively', () => {
    expect(table.authenticate('bearer tok-alpha', 'host')?.name).toBe('alpha');
    expect(table.authenticate('BEARER   tok-alpha ', 'host')?.name).toBe('alpha');
  });

  it('compares digests with timingSafeEqual against every entry, without an early exit', () => {
    const spy = vi.mocked(timingSafeEqual);
    spy.mockClear();
    table.authenticate('Bearer tok-alpha', 'host'); // matches the first entry
    expect(spy).toHaveBeenCalledTimes(hosts.length + callers.length);
    for (const [a, b] of spy.mock.calls) {
      expect((a as Buffer).length).toBe(32); // SHA-256 digests, never the raw token
      expect((b as Buffer).length).toBe(32);
    }
    spy.mockClear();
    table.authenticate('Bearer nobody', 'host');
    expect(spy).toHaveBeenCalledTimes(hosts.length + callers.length);
  });

  it('does not keep tokens in plain text', () => {
    expect(inspect(table, { depth: 10, showHidden: true })).not.toContain('tok-alpha');
    expect(JSON.stringify(table)).not.toContain('tok-alpha');
  });
});

describe('TokenTable construction', () => {
  it.each([
    ['a host name with a space', [{ name: 'bad name', token: 't' }], []],
    ['a host name containing "__"', [{ name: 'a__b', token: 't' }], []],
    ['a host name longer than 64', [{ name: 'h'.repeat(65), token: 't' }], []],
    ['an empty host name', [{ name: '', token: 't' }], []],
    ['an empty token', [{ name: 'alpha', token: '' }], []],
    ['a token with whitespace', [{ name: 'alpha', token: 'a b' }], []],
    [
      'a duplicate host name',
      [
        { name: 'alpha', token: 't1' },
        { name: 'alpha', token: 't2' },
      ],
      [],
    ],
    [
      'a duplicate caller name',
      [],
      [
        { name: 'agent', token: 't1' },
        { name: 'agent', token: 't2' },
      ],
    ],
    ['a token used by two identities', [{ name: 'alpha', token: 'same' }], [{ name: 'agent', token: 'same' }]],
    ['a caller grant that is not a string array', [], [{ name: 'agent', token: 't', grant: 'alpha' }]],
  ])('throws TypeError on %s', (_label, h, c) => {
    expect(() => new TokenTable(h as never, c as never)).toThrow(TypeError);
  });

  it('allows a single "_" and "-" in host names', () => {
    expect(() => new TokenTable([{ name: 'build_box-2', token: 't' }], [])).not.toThrow();
  });
});

describe('TokenTable.update', () => {
  it('replaces both sets at once (token rotation)', () => {
    const table = new TokenTable(hosts, callers);
    table.update([{ name: 'alpha', token: 'rotated' }], []);
    expect(table.authenticate('Bearer tok-alpha', 'host')).toBeUndefined();
    expect(table.authenticate('Bearer rotated', 'host')?.name).toBe('alpha');
    expect(table.authenticate('Bearer tok-agent', 'caller')).toBeUndefined();
  });

  it('keeps the old table when the new sets are invalid', () => {
    const table = new TokenTable(hosts, callers);
    expect(() => table.update([{ name: 'a__b', token: 'x' }], [])).toThrow(TypeError);
    expect(table.authenticate('Bearer tok-alpha', 'host')?.name).toBe('alpha');
  });

  it('reports configured host identities', () => {
    const table = new TokenTable(hosts, callers);
    expect(table.hasHost('alpha')).toBe(true);
    expect(table.hasHost('agent')).toBe(false);
  });
});
