import { describe, expect, it } from 'vitest';
import { CloseCode, ExitCode, FailureKind, SIGNAL_EXIT_BASE, closeCodeName } from '@toolwire/protocol';

describe('exit codes (DESIGN §4)', () => {
  it('are pinned: changing one is a protocol change', () => {
    expect(ExitCode).toEqual({
      OK: 0,
      DATA_ERR: 65,
      UNAVAILABLE: 69,
      SOFTWARE: 70,
      TEMPFAIL: 75,
      PROTOCOL: 76,
      TIMEOUT: 124,
      CANNOT_EXECUTE: 126,
      NOT_FOUND: 127,
      CANCELLED: 130,
      USAGE: 64,
      NO_INPUT: 66,
      NO_USER: 67,
      CANT_CREATE: 73,
      NO_PERM: 77,
    });
    expect(SIGNAL_EXIT_BASE).toBe(128);
  });

  it('map every failure kind to one distinct non-zero code', () => {
    expect(FailureKind).toEqual({
      invalid_input: 65,
      unavailable: 69,
      host_error: 70,
      overloaded: 75,
      protocol: 76,
      deadline: 124,
      cannot_execute: 126,
      not_found: 127,
      cancelled: 130,
    });
    const codes = Object.values(FailureKind);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('close codes (DESIGN §5, RFC 6455 §7.4)', () => {
  it('are pinned', () => {
    expect(CloseCode).toEqual({
      NORMAL: 1000,
      GOING_AWAY: 1001,
      PROTOCOL_ERROR: 1002,
      UNSUPPORTED_DATA: 1003,
      INVALID_PAYLOAD: 1007,
      POLICY_VIOLATION: 1008,
      MESSAGE_TOO_BIG: 1009,
      INTERNAL_ERROR: 1011,
      REPLACED: 4000,
    });
  });

  it('have names for logs', () => {
    expect(closeCodeName(4000)).toBe('REPLACED');
    expect(closeCodeName(1234)).toBe('UNKNOWN');
  });
});
