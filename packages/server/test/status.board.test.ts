import { describe, expect, it } from 'vitest';
import type { Capture } from '@toolwire/protocol';
import { CallBoard } from '../src/status/call-board.js';
import type { RoutedCall } from '../src/seam.js';

const capture = (exitCode: number, out = ''): Capture => ({ stdout: Buffer.from(out), stderr: new Uint8Array(0), exitCode });

function board(recent = 3, stopped: RoutedCall[] = []) {
  return new CallBoard({ hostOf: (name) => (name.startsWith('alpha__') ? 'alpha' : undefined), stopCall: (call) => (stopped.push(call), true) }, recent);
}

describe('CallBoard', () => {
  it('lists calls in flight oldest first with their host, and forgets them when they end', () => {
    const b = board();
    const one = b.begin('1', 'agent', 'alpha__x');
    const two = b.begin('2', 'agent', 'local_tool');
    expect(b.live().map((c) => [c.id, c.host])).toEqual([
      ['1', 'alpha'],
      ['2', undefined],
    ]);
    expect(b.live(1)).toHaveLength(1);
    b.end(one, capture(0));
    b.end(two, undefined); // declined/refused/thrown: not a finished call
    expect(b.size).toBe(0);
    expect(b.recent().map((c) => c.id)).toEqual(['1']);
  });

  it('keeps the order of the calls in flight whichever ends first, and ignores a second end of a call', () => {
    const b = board(10);
    const calls = ['1', '2', '3', '4'].map((id) => b.begin(id, 'agent', 'alpha__x'));
    b.end(calls[1]!, capture(0)); // middle
    b.end(calls[3]!, capture(0)); // newest
    b.end(calls[1]!, capture(0)); // again: nothing changes
    expect(b.live().map((c) => c.id)).toEqual(['1', '3']);
    expect(b.find('3')).toBe(calls[2]);
    expect(b.find('2')).toBeUndefined();
    expect(b.stop(calls[1]!)).toBe('not-found');
    const five = b.begin('5', 'agent', 'alpha__x');
    b.end(calls[0]!, capture(0)); // oldest
    expect(b.live().map((c) => c.id)).toEqual(['3', '5']);
    b.end(calls[2]!, capture(0));
    b.end(five, capture(0));
    expect(b.size).toBe(0);
    expect(b.live()).toEqual([]);
    expect(b.recent().map((c) => c.id)).toEqual(['5', '3', '1', '4', '2']);
  });

  it('keeps the last `recent` finished calls, newest first, with exit code, failure kind and bytes', () => {
    const b = board(3);
    for (let i = 0; i < 7; i++) b.end(b.begin(String(i), 'agent', 'alpha__x'), i === 6 ? { ...capture(130, 'abc'), failure: 'cancelled' } : capture(i));
    const recent = b.recent();
    expect(recent.map((c) => c.id)).toEqual(['6', '5', '4']);
    expect(recent[0]).toMatchObject({ exitCode: 130, failure: 'cancelled', bytes: 3, host: 'alpha', agent: 'agent', tool: 'alpha__x' });
    expect(recent[0]!.endedAt).toBeGreaterThanOrEqual(recent[0]!.startedAt);
  });

  it('stops a routed call through the router; not routed or not in flight is said so', () => {
    const stopped: RoutedCall[] = [];
    const b = board(3, stopped);
    const call = b.begin('1', 'agent', 'alpha__x');
    expect(b.stop(call)).toBe('not-routed');
    const routed = { id: '1' } as RoutedCall;
    call.routed = routed;
    expect(b.find('1', 'other')).toBeUndefined();
    expect(b.find('1', 'agent')).toBe(call);
    expect(b.stop(call)).toBe('stopped');
    expect(stopped).toEqual([routed]);
    b.end(call, capture(130));
    expect(b.stop(call)).toBe('not-found');
  });

  it('tells its listener of every start and end', () => {
    const b = board();
    let changes = 0;
    b.onChange(() => changes++);
    b.end(b.begin('1', 'agent', 'x'), capture(0));
    expect(changes).toBe(2);
    b.onChange(undefined);
    b.begin('2', 'agent', 'x');
    expect(changes).toBe(2);
    expect(() => new CallBoard({ hostOf: () => undefined, stopCall: () => false }, 0)).toThrow(RangeError);
  });
});
