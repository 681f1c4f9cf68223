import { describe, expect, it } from 'vitest';
import { generateToken } from '../src/auth/generate-token.js';

describe('generateToken', () => {
  it('gives 32 base64url characters and never a leading "-" (which a command line reads as a flag)', () => {
    // With a plain base64url draw, 1 token in 64 starts with "-": 4,000 draws all miss that with
    // probability (63/64)^4000 < 1e-27.
    const tokens = Array.from({ length: 4000 }, generateToken);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{31}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
