/**
 * The second step of a host's `advertise`: decide which well-formed entries could be accepted and
 * compile their schemas (`schema-compiler.ts`, off the event loop, within the host's budget).
 * Entries whose name the registry would refuse anyway (a name taken earlier in this advertise by a
 * well-formed entry, too long, or another host's), and well-formed entries after the first
 * `maxToolsPerHost`, are refused without compiling.
 */
import type { PreparedAdvertise } from './prepare.js';
import { tooManyReason, type ToolRegistry } from './registry.js';
import type { SchemaCompiler } from './schema-compiler.js';
import type { ExaminedOk, ToolCheck } from './validate-tool.js';

/** What checking reads. `isCurrent`: false once the advertising session is no longer its host's. */
export interface AdvertiseCheckDeps {
  compiler: Pick<SchemaCompiler, 'compileAll'>;
  registry: Pick<ToolRegistry, 'nameRefusal'>;
  maxToolsPerHost: number;
  isCurrent: () => boolean;
}

/**
 * One check per prepared entry of `host`'s advertise, for `ToolRegistry.apply`; `undefined` when the
 * session stopped being current meanwhile (its advertise is void). Never rejects.
 */
export async function checkAdvertise(host: string, prepared: PreparedAdvertise, deps: AdvertiseCheckDeps): Promise<ToolCheck[] | undefined> {
  const { compiler, registry, maxToolsPerHost, isCurrent } = deps;
  const checks: (ToolCheck | undefined)[] = [];
  const candidates: ExaminedOk[] = [];
  const seen = new Set<string>();
  for (const entry of prepared.entries) {
    if (!entry.ok) {
      checks.push(entry);
      continue;
    }
    const refusal = registry.nameRefusal(host, entry.name, seen) ?? (candidates.length >= maxToolsPerHost ? tooManyReason(maxToolsPerHost) : undefined);
    seen.add(entry.name);
    if (refusal !== undefined) {
      checks.push({ ok: false, name: entry.name, reason: refusal });
      continue;
    }
    checks.push(undefined); // filled in below, in order
    candidates.push(entry);
  }
  const compiled = await compiler.compileAll(host, candidates, isCurrent);
  if (compiled === undefined || !isCurrent()) return undefined;
  let next = 0;
  return checks.map((check) => check ?? compiled[next++]!);
}
