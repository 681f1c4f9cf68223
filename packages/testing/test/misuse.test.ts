/**
 * Misuse of the kit is refused at once with a TypeError or RangeError, before anything is opened: a
 * tool map that cannot be advertised, a bound or delay that is negative, not a number, or past what a
 * timer can hold (2^31 - 1 ms; Node fires a longer timer after 1 ms).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  closeAll,
  expectCapture,
  openHandles,
  startHost,
  startProxy,
  startRogueHost,
  startServer,
  waitForHost,
  waitForToolsChanged,
  waitUntil,
} from '@toolwire/testing';
import { expectNothingLeft, remember } from './leaks.js';

afterAll(async () => {
  await closeAll();
  await expectNothingLeft();
});

const TOO_LONG = 2 ** 31; // ms: one past the longest timer Node honours

describe('kit misuse', () => {
  it('startHost refuses a tool map it cannot advertise with a TypeError and leaves no proxy or host open', async () => {
    await using server = remember(await startServer());
    const before = openHandles();
    for (const bad of [42, null, [], { echo: 42 }, { echo: null }, { c: { command: [] } }]) {
      await expect(startHost(server, bad as never, { name: 'bad' }), JSON.stringify(bad)).rejects.toThrow(TypeError);
      expect(openHandles(), `after ${JSON.stringify(bad)}`).toEqual(before);
    }
  });

  it('startHost refuses a bad timeoutMs with a RangeError before it opens anything', async () => {
    await using server = remember(await startServer());
    const before = openHandles();
    for (const timeoutMs of [-1, Number.NaN, TOO_LONG]) {
      await expect(startHost(server, { echo: () => 'x' }, { name: 'bounded', timeoutMs })).rejects.toThrow(RangeError);
      expect(openHandles()).toEqual(before);
    }
  });

  it('every wait refuses a negative, NaN or too long timeoutMs or everyMs with a RangeError at once', async () => {
    await using server = remember(await startServer());
    for (const options of [{ timeoutMs: -1 }, { timeoutMs: Number.NaN }, { timeoutMs: TOO_LONG }, { everyMs: -5 }, { everyMs: Number.POSITIVE_INFINITY }]) {
      expect(() => waitUntil(() => true, 'anything', options), JSON.stringify(options)).toThrow(RangeError);
      expect(() => waitForHost(server, 'h', options)).toThrow(RangeError);
      expect(() => waitForToolsChanged(server, options)).toThrow(RangeError);
    }
  });

  it('a latency, jitter or slowClose past what a timer can hold is refused with a RangeError, on the proxy and on a connection', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, { echo: () => 'x' }, { name: 'delays' }));
    await using proxy = remember(await startProxy(server.url));
    const connection = await host.net.nextConnection({ existing: true });
    for (const controls of [proxy, host.net, connection]) {
      expect(() => controls.latency(TOO_LONG)).toThrow(RangeError);
      expect(() => controls.latency(10, TOO_LONG)).toThrow(RangeError);
      expect(() => controls.slowClose(TOO_LONG)).toThrow(RangeError);
      expect(() => controls.latency(2 ** 31 - 1)).not.toThrow();
      controls.heal();
    }
  });

  it('startRogueHost refuses a behaviour or script it cannot run with a TypeError before it connects', async () => {
    await using server = remember(await startServer());
    const before = openHandles();
    const scripts = [
      'toString',
      42,
      null,
      { onCall: 'echo' },
      { onCall: () => {}, tools: 'rogue' },
      { onCall: () => {}, name: 7 },
      { onCall: () => {}, onCancel: 1 },
    ];
    for (const script of scripts) {
      await expect(startRogueHost(server, script as never), String(JSON.stringify(script))).rejects.toThrow(TypeError);
      expect(openHandles()).toEqual(before);
    }
  });

  it('a capture check given an argument of the wrong type throws a TypeError, not an AssertionError that contradicts itself', () => {
    const capture = { stdout: new Uint8Array(), stderr: Buffer.from('toolwire: host h lost\n'), exitCode: 69 };
    const check = expectCapture(capture);
    expect(() => check.toExit('69' as never)).toThrow(TypeError);
    expect(() => check.toExit(69.5)).toThrow(TypeError);
    for (const bad of [42, undefined, {}]) {
      expect(() => check.withReason(bad as never)).toThrow(TypeError);
      expect(() => check.withStdout(bad as never)).toThrow(TypeError);
      expect(() => check.withStderr(bad as never)).toThrow(TypeError);
      expect(() => check.withFailure(bad as never)).toThrow(TypeError);
    }
    expect(() => check.toExit(69).withReason(/lost/).withReason('host h')).not.toThrow();
  });
});
