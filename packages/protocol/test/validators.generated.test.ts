import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateValidators } from '../scripts/generate-validators.js';

describe('validators.generated.ts', () => {
  it('is what scripts/generate-validators.ts makes from schemas.ts today (run `pnpm --filter @toolwire/protocol generate` after a schema change)', () => {
    const committed = readFileSync(new URL('../src/validators.generated.ts', import.meta.url), 'utf8');
    expect(committed).toBe(generateValidators());
  });
});
