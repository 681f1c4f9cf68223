import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';

// Count constant-time comparisons while keeping the real implementation.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});

const { createHash, timingSafeEqual } = await import('node:crypto');
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

  it('makes exactly one constant-time compare of SHA-256 digests per authentication, hit or miss', () => {
    const spy = vi.mocked(timingSafeEqual);
    for (const header of ['Bearer tok-alpha', 'Bearer tok-ci', 'Bearer nobody', 'Bearer tok-alph', 'Bearer tok-agent']) {
      spy.mockClear();
      table.authenticate(header, 'host');
      expect(spy).toHaveBeenCalledTimes(1);
      const [a, b] = spy.mock.calls[0]!;
      expect((a as Buffer).length).toBe(32); // SHA-256 digests, never the raw token
      expect((b as Buffer).length).toBe(32);
    }
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

describe('TokenTable with many identities (digest map)', () => {
  const N = 10_000;
  const manyHosts = Array.from({ length: N }, (_, i) => ({ name: `h${i}`, token: `host-token-${i}` }));
  const manyCallers = Array.from({ length: 1_000 }, (_, i) => ({ name: `c${i}`, token: `caller-token-${i}` }));
  const table = new TokenTable(manyHosts, manyCallers);

  it('finds every identity with one constant-time compare, whatever the table size', () => {
    const spy = vi.mocked(timingSafeEqual);
    spy.mockClear();
    for (const i of [0, 1, 4_999, N - 1]) expect(table.authenticate(`Bearer host-token-${i}`, 'host')).toEqual({ role: 'host', name: `h${i}` });
    expect(table.authenticate('Bearer caller-token-999', 'caller')).toEqual({ role: 'caller', name: 'c999', grant: ['*'] });
    expect(spy).toHaveBeenCalledTimes(5);
  });

  it('refuses unknown tokens, near misses and tokens of the other role', () => {
    const spy = vi.mocked(timingSafeEqual);
    spy.mockClear();
    for (const header of ['Bearer host-token-10000', 'Bearer host-token-1x', 'Bearer Host-token-1', 'Bearer caller-token-1000']) {
      expect(table.authenticate(header, 'host')).toBeUndefined();
      expect(table.authenticate(header, 'caller')).toBeUndefined();
    }
    expect(table.authenticate('Bearer host-token-7', 'caller')).toBeUndefined();
    expect(table.authenticate('Bearer caller-token-7', 'host')).toBeUndefined();
    expect(spy).toHaveBeenCalledTimes(10);
  });

  it('answers hasHost and isCurrent for any identity', () => {
    expect(table.hasHost('h9999')).toBe(true);
    expect(table.hasHost('h10000')).toBe(false);
    expect(table.hasHost('c5')).toBe(false);
    const principal = table.authenticate('Bearer host-token-1234', 'host')!;
    expect(table.isCurrent(principal)).toBe(true);
    expect(table.isCurrent({ role: 'host', name: 'h1234' })).toBe(false); // an equal object is not the principal handed out
  });
});

describe('TokenTable rotation and revocation', () => {
  it('keeps the principal of an unchanged credential current and makes a removed, rotated or changed one stale', () => {
    const table = new TokenTable(hosts, callers);
    const alpha = table.authenticate('Bearer tok-alpha', 'host')!;
    const beta = table.authenticate('Bearer tok-beta', 'host')!;
    const agent = table.authenticate('Bearer tok-agent', 'caller')!;
    const ci = table.authenticate('Bearer tok-ci', 'caller')!;
    table.update(
      [
        { name: 'alpha', token: 'tok-alpha' }, // unchanged
        { name: 'beta_1', token: 'tok-beta-2' }, // rotated
      ],
      [{ name: 'ci', token: 'tok-ci', grant: ['*'] }], // grant changed; agent removed
    );
    expect(table.isCurrent(alpha)).toBe(true);
    expect(table.authenticate('Bearer tok-alpha', 'host')).toBe(alpha);
    expect(table.isCurrent(beta)).toBe(false);
    expect(table.authenticate('Bearer tok-beta', 'host')).toBeUndefined();
    expect(table.authenticate('Bearer tok-beta-2', 'host')?.name).toBe('beta_1');
    expect(table.isCurrent(agent)).toBe(false);
    expect(table.authenticate('Bearer tok-agent', 'caller')).toBeUndefined();
    expect(table.isCurrent(ci)).toBe(false);
    expect(table.authenticate('Bearer tok-ci', 'caller')).toEqual({ role: 'caller', name: 'ci', grant: ['*'] });
  });

  it('accepts a tokenDigest credential as the token it digests', () => {
    const digest = createHash('sha256').update('tok-digest', 'utf8').digest('hex');
    const table = new TokenTable([{ name: 'gamma', tokenDigest: digest }], []);
    expect(table.authenticate('Bearer tok-digest', 'host')?.name).toBe('gamma');
    expect(table.authenticate(`Bearer ${digest}`, 'host')).toBeUndefined(); // the digest is not the token
  });

  it('hasHost follows an update', () => {
    const table = new TokenTable(hosts, callers);
    table.update([{ name: 'delta', token: 'tok-delta' }], []);
    expect(table.hasHost('alpha')).toBe(false);
    expect(table.hasHost('delta')).toBe(true);
  });
});
