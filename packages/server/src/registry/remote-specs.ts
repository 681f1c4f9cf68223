/**
 * Tools of hosts connected to another cluster node (DESIGN §10). Their node accepted them already
 * (the same checks, and their schemas compiled within that host's budget there), so this node
 * examines them (shape, names, limits) but compiles nothing when they are listed: a schema is
 * compiled where input is validated — by the executor of the node a caller uses, at the tool's
 * first call (`compileInputSchema`, cached by text). Equal specs are shared across hosts as for
 * local ones (`intern.ts`), and a tool set shared by many hosts of one `state` fetch is examined
 * once.
 */
import type { PreparedAdvertise } from './prepare.js';
import { prepareAdvertise, type PrepareLimits } from './prepare.js';
import type { SchemaCompiler } from './schema-compiler.js';
import { type ExaminedOk, type ToolCheck, toolSpecOf } from './validate-tool.js';

/** Examined tool sets by array identity (a cluster fetch hands the same array for every host that has it). */
const prepared = new WeakMap<readonly unknown[], PreparedAdvertise>();

/** `tools` examined (once per array object). */
export function prepareRemote(tools: readonly unknown[], limits: PrepareLimits): PreparedAdvertise {
  let known = prepared.get(tools);
  if (known === undefined) prepared.set(tools, (known = prepareAdvertise(tools, limits)));
  return known;
}

/** The compiler step for remote hosts: every examined tool is accepted as it is, nothing compiled. */
export const acceptRemote: Pick<SchemaCompiler, 'compileAll'> = {
  compileAll: (_host: string, tools: readonly ExaminedOk[]): Promise<ToolCheck[]> =>
    Promise.resolve(
      tools.map((examined) => ({
        ok: true,
        tool: toolSpecOf(examined, examined.schema ?? (JSON.parse(examined.text) as Record<string, unknown>)),
        text: examined.text,
      })),
    ),
};
