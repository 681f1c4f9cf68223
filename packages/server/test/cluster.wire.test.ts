/**
 * What cluster nodes send each other for a call's answers (cluster/answer.ts), the batches calls
 * and answers travel in (cluster/batch.ts) and a node's hosts (cluster/state-pages.ts).
 */
import type { Capture, ToolSpec } from '@toolwire/protocol';
import { describe, expect, it } from 'vitest';
import { type Answer, decodeAnswer, decodeMeta, encodeCapture, encodeOutput } from '../src/cluster/answer.js';
import { Batcher, ITEM_HEADER, unbatch } from '../src/cluster/batch.js';
import type { Bus } from '../src/cluster/bus.js';
import { StatePages } from '../src/cluster/state-pages.js';
import type { StatePage } from '../src/cluster/wire.js';
import type { LocalHost } from '../src/router/listing.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Decode `messages` as the caller's node does: parts appended, then the end's own bytes. */
function reassemble(messages: Uint8Array[]): Capture {
  const parts: Record<string, Uint8Array[]> = { stdout: [], stderr: [], meta: [] };
  for (const message of messages.slice(0, -1)) {
    const answer = decodeAnswer(message) as Extract<Answer, { t: 'part' }>;
    expect(answer.t).toBe('part');
    parts[answer.section]!.push(answer.bytes);
  }
  const end = decodeAnswer(messages.at(-1)!) as Extract<Answer, { t: 'end' }>;
  expect(end.t).toBe('end');
  const join = (section: string, last: Uint8Array): Uint8Array => Buffer.concat([...parts[section]!, last]);
  return { stdout: join('stdout', end.stdout), stderr: join('stderr', end.stderr), exitCode: end.exitCode, ...decodeMeta(join('meta', end.meta)) };
}

describe('call answers between nodes', () => {
  it('sends a capture that fits one NATS message as one message, bytes as they are', () => {
    const capture: Capture = { stdout: bytes('out\u00e9\n'), stderr: new Uint8Array([0, 255, 10]), exitCode: 3 };
    const messages = encodeCapture(capture, 1024);
    expect(messages).toHaveLength(1);
    expect(reassemble(messages)).toEqual({ ...capture, stdout: Buffer.from(capture.stdout), stderr: Buffer.from(capture.stderr) });
  });

  it('splits a larger capture into parts of at most max_payload bytes, and keeps failure, content and negative exit codes', () => {
    const capture: Capture = {
      stdout: new Uint8Array(5000).fill(7),
      stderr: bytes('toolwire: deadline of 5 ms exceeded\n'),
      exitCode: -2,
      failure: 'deadline',
      content: [{ type: 'text', text: 'hi' }],
    };
    const messages = encodeCapture(capture, 1000);
    expect(messages.length).toBeGreaterThan(5);
    for (const m of messages) expect(m.length).toBeLessThanOrEqual(1000);
    const back = reassemble(messages);
    expect(Buffer.from(back.stdout).equals(Buffer.from(capture.stdout))).toBe(true);
    expect(Buffer.from(back.stderr).toString()).toBe('toolwire: deadline of 5 ms exceeded\n');
    expect([back.exitCode, back.failure, back.content]).toEqual([-2, 'deadline', [{ type: 'text', text: 'hi' }]]);
  });

  it('carries a live-output chunk with its stream and seq', () => {
    const answer = decodeAnswer(encodeOutput('stderr', 2 ** 40 + 5, bytes('tick\n')));
    expect(answer).toMatchObject({ t: 'output', stream: 'stderr', seq: 2 ** 40 + 5 });
    expect(Buffer.from((answer as { bytes: Uint8Array }).bytes).toString()).toBe('tick\n');
  });

  it('refuses malformed answers (unknown kind, short, lengths that do not add up, unknown failure kind)', () => {
    expect(decodeAnswer(new Uint8Array([9, 1, 2]))).toBeUndefined();
    expect(decodeAnswer(new Uint8Array([3]))).toBeUndefined();
    const end = Buffer.from(encodeCapture({ stdout: bytes('abc'), stderr: new Uint8Array(0), exitCode: 0 }, 1024)[0]!);
    expect(decodeAnswer(end.subarray(0, end.length - 1))).toBeUndefined();
    expect(decodeAnswer(new Uint8Array([2, 4, 0]))).toBeUndefined();
    expect(decodeMeta(bytes('{"failure":"nope"}'))).toEqual({});
    expect(decodeMeta(bytes('{'))).toBeUndefined();
  });
});

/** A bus that records what is published (subject, data, reply), with NATS `max_payload` `maxPayload`. */
function recordingBus(maxPayload: number): Bus & { sent: [string, Uint8Array, string | undefined][] } {
  const sent: [string, Uint8Array, string | undefined][] = [];
  return {
    sent,
    connected: true,
    maxPayload,
    publish: (subject, data, reply) => void sent.push([subject, data, reply]),
    subscribe: () => () => undefined,
    request: () => Promise.reject(new Error('not used')),
  };
}

/** The items of batch `data`, as [id, text]. */
function items(data: Uint8Array): [number, string][] {
  const out: [number, string][] = [];
  expect(unbatch(data, (id, b) => void out.push([id, Buffer.from(b).toString()]))).toBe(true);
  return out;
}

describe('batches of calls and answers between nodes', () => {
  it('sends what is queued for one subject in one turn as one message, items in order, at the end of the turn', async () => {
    const bus = recordingBus(1024);
    const batcher = new Batcher(bus);
    batcher.send('node.a.call', 1, bytes('one'), 'reply.b');
    batcher.send('node.c.call', 2 ** 40, bytes('two'), 'reply.b');
    batcher.send('node.a.call', 3, bytes(''), 'reply.b');
    expect(bus.sent).toHaveLength(0);
    await Promise.resolve();
    expect(bus.sent.map(([subject, data, reply]) => [subject, items(data), reply])).toEqual([
      [
        'node.a.call',
        [
          [1, 'one'],
          [3, ''],
        ],
        'reply.b',
      ],
      ['node.c.call', [[2 ** 40, 'two']], 'reply.b'],
    ]);
  });

  it('starts a new message before an item would take one past max_payload', async () => {
    const bus = recordingBus(2 * (ITEM_HEADER + 40));
    const batcher = new Batcher(bus);
    for (let id = 0; id < 5; id++) batcher.send('reply.b', id, bytes('x'.repeat(40)));
    await Promise.resolve();
    expect(bus.sent.map(([, data]) => items(data).map(([id]) => id))).toEqual([[0, 1], [2, 3], [4]]);
    for (const [, data] of bus.sent) expect(data.length).toBeLessThanOrEqual(bus.maxPayload);
  });

  it('publishes a single message (a cancel) only after the batches queued before it', () => {
    const bus = recordingBus(1024);
    const batcher = new Batcher(bus);
    batcher.send('node.a.call', 7, bytes('call'), 'reply.b');
    batcher.publish('node.a.cancel', bytes('cancel 7'));
    expect(bus.sent.map(([subject]) => subject)).toEqual(['node.a.call', 'node.a.cancel']);
  });

  it('refuses a malformed batch whole (empty, a short header, a length past the end), handing over no item', () => {
    const good = (() => {
      const bus = recordingBus(1024);
      const batcher = new Batcher(bus);
      batcher.send('s', 1, bytes('abc'));
      batcher.send('s', 2, bytes('de'));
      batcher.flush();
      return Buffer.from(bus.sent[0]![1]);
    })();
    expect(items(good)).toEqual([
      [1, 'abc'],
      [2, 'de'],
    ]);
    let handed = 0;
    for (const bad of [new Uint8Array(0), good.subarray(0, 5), good.subarray(0, good.length - 1), Buffer.from('{}')]) {
      expect(unbatch(bad, () => void handed++)).toBe(false);
    }
    expect(handed).toBe(0);
  });
});

describe('state pages', () => {
  const tools = (n: number): ToolSpec[] => Array.from({ length: n }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object' } }));
  const shared = tools(3);
  const other = tools(1);
  const hosts = (n: number): LocalHost[] =>
    Array.from({ length: n }, (_, i) => ({ host: `h${i}`, connectedAt: new Date(1000 + i), tools: i % 10 === 9 ? other : shared }));

  it('sends each distinct tool set of a page once, hosts naming theirs by index, and pages through every host', () => {
    const pages = new StatePages(
      () => hosts(100),
      (host) => hosts(100).find((h) => h.host === host),
      'boot1',
    );
    const seen: StatePage['hosts'] = [];
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const page = JSON.parse(pages.page(1, { offset, version: 1 }, 2000)) as StatePage;
      expect(page.version).toBe(1);
      expect(page.sets.length).toBeLessThanOrEqual(2);
      for (const h of page.hosts) expect(page.sets[h.set]).toEqual(h.host.endsWith('9') ? other : shared);
      seen.push(...page.hosts);
      offset = page.next;
    }
    expect(seen.map((h) => h.host)).toEqual(hosts(100).map((h) => h.host));
  });

  it('keeps serving the version a peer is paging through after the host set moved on', () => {
    let current = hosts(30);
    const pages = new StatePages(
      () => current,
      (host) => current.find((h) => h.host === host),
      'boot1',
    );
    const first = JSON.parse(pages.page(1, { offset: 0 }, 600)) as StatePage;
    expect(first.next).toBeGreaterThan(0);
    current = hosts(5);
    const second = JSON.parse(pages.page(2, { offset: first.next!, version: 1 }, 100_000)) as StatePage;
    expect(second.version).toBe(1);
    expect(second.hosts.at(-1)!.host).toBe('h29');
    const fresh = JSON.parse(pages.page(2, { offset: 0 }, 100_000)) as StatePage;
    expect([fresh.version, fresh.hosts.length]).toEqual([2, 5]);
  });

  it('answers a peer that applied an earlier version with the hosts changed since (one page, `gone` for those that left)', () => {
    let current = hosts(30);
    const pages = new StatePages(
      () => current,
      (host) => current.find((h) => h.host === host),
      'boot1',
    );
    current.forEach((h, i) => pages.note(h.host, i + 1)); // versions 1…30: h0 … h29 bound
    current = current.filter((h) => h.host !== 'h28');
    pages.note('h28', 31);
    const delta = JSON.parse(pages.page(31, { offset: 0, since: 27 }, 100_000)) as StatePage;
    expect([delta.version, delta.since, delta.next]).toEqual([31, 27, undefined]);
    expect(delta.hosts.map((h) => h.host)).toEqual(['h27', 'h29']);
    expect(delta.gone).toEqual(['h28']);
    expect(delta.sets).toEqual([shared, other]);
    // Changes that do not fit one page: the first page of every host instead.
    const full = JSON.parse(pages.page(31, { offset: 0, since: 0 }, 600)) as StatePage;
    expect([full.since, full.gone, full.hosts[0]!.host]).toEqual([undefined, undefined, 'h0']);
    expect(full.next).toBeGreaterThan(0);
  });
});
