/**
 * Each rogue frame kind gives the documented capture (DESIGN §6): 76 for garbage, invalid UTF-8,
 * binary, oversize and wrong-shape frames; unknown-id, duplicate and late results are dropped and
 * the session kept.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type RogueBehaviour, closeAll, expectCapture, startRogueHost, startServer } from '@toolwire/testing';
import { expectNothingLeft, remember } from './leaks.js';

afterAll(async () => {
  await closeAll();
  await expectNothingLeft();
});

describe('a rogue host: each frame kind gives its documented capture', () => {
  const closing: [RogueBehaviour, number][] = [
    ['garbage', 1002],
    ['invalid-utf8', 1007],
    ['binary', 1003],
    ['oversize', 1009],
  ];
  for (const [behaviour, closeCode] of closing) {
    it(`${behaviour}: the session is closed ${closeCode} and the call settles 76`, async () => {
      await using server = remember(await startServer({ maxPayload: 64 * 1024 }));
      await using rogue = await startRogueHost(server, behaviour);
      expectCapture(await server.call('rogue__rogue', {}))
        .toExit(76)
        .withFailure('protocol');
      expect((await rogue.closed).code).toBe(closeCode);
    });
  }

  it('wrong-shape: that call settles 76 with the schema error and the session is kept', async () => {
    await using server = remember(await startServer());
    await using rogue = await startRogueHost(server, 'wrong-shape');
    expectCapture(await server.call('rogue__rogue', {}))
      .toExit(76)
      .withReason(/stdout/);
    expectCapture(await server.call('rogue__rogue', {})).toExit(76);
    expect(rogue.ws.readyState).toBe(rogue.ws.OPEN);
  });

  it('unknown-id: the stray result is dropped and the real answer is the capture', async () => {
    await using server = remember(await startServer());
    await using rogue = await startRogueHost(server, 'unknown-id');
    expectCapture(await server.call('rogue__rogue', {}))
      .toExit(0)
      .withStdout('answered');
    expect(rogue.ws.readyState).toBe(rogue.ws.OPEN);
  });

  it('duplicate: the first result wins and the second is dropped', async () => {
    await using server = remember(await startServer());
    await using rogue = await startRogueHost(server, 'duplicate');
    expectCapture(await server.call('rogue__rogue', {}))
      .toExit(0)
      .withStdout(/^first$/);
    expectCapture(await server.call('rogue__rogue', {}))
      .toExit(0)
      .withStdout(/^first$/);
    expect(rogue.ws.readyState).toBe(rogue.ws.OPEN);
  });

  it('late-after-cancel: the deadline capture (124) stands, the late result is dropped, the session kept', async () => {
    await using server = remember(await startServer());
    await using rogue = await startRogueHost(server, 'late-after-cancel');
    expectCapture(await server.call('rogue__rogue', {}, { deadlineMs: 200 }))
      .toExit(124)
      .withReason(/200 ms/);
    const cancel = await rogue.cancelOf(rogue.calls[0]!.id);
    expect(cancel.reason).toBe('deadline');
    // the late answer went out; the next call still reaches the rogue (session kept)
    const next = server.call('rogue__rogue', {}, { deadlineMs: 200 });
    expect((await rogue.nextCall()).id).toBe(rogue.calls[0]!.id);
    expect((await rogue.nextCall()).id).toBe(rogue.calls[1]!.id);
    expectCapture(await next).toExit(124);
  });

  it('a script of callbacks: answers the first call, then garbage', async () => {
    await using server = remember(await startServer());
    let n = 0;
    await using rogue = await startRogueHost(server, {
      name: 'scripted',
      tools: [{ name: 't', inputSchema: { type: 'object' } }],
      onCall: (call, r) => (n++ === 0 ? r.result(call.id, { stdout: 'fine' }) : r.garbage()),
    });
    expectCapture(await server.call('scripted__t', {}))
      .toExit(0)
      .withStdout('fine');
    expectCapture(await server.call('scripted__t', {})).toExit(76);
    expect((await rogue.closed).code).toBe(1002);
  });
});
