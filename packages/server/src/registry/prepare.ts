/**
 * The first, cheap step of an `advertise` (no ajv, no registry: it also runs in the offload worker):
 * bound how many entries are looked at, and examine those (`examineTool`).
 */
import { examineTool, type ExaminedTool, type ToolLimits } from './validate-tool.js';

/** What preparing reads: the tool limits and the tools a host may have. */
export interface PrepareLimits extends ToolLimits {
  maxToolsPerHost: number;
}

/** An advertise after the cheap checks: the examined entries in order, and how many were not examined. */
export interface PreparedAdvertise {
  entries: ExaminedTool[];
  /** Entries after the examined ones: rejected unexamined ("too many tools"). */
  unexamined: number;
}

/** Entries of one advertise examined at most, as a multiple of `maxToolsPerHost`. */
export const EXAMINED_PER_TOOL = 2;

/**
 * Examine the first `EXAMINED_PER_TOOL × maxToolsPerHost` entries of `tools` (room for the allowed
 * tools and as many refused ones) and count the rest, which are never looked at: an advertise of
 * millions of entries costs what one of 512 does. `keepSchemas`: keep each parsed schema object
 * (on the event loop); the worker sends only the schema text.
 */
export function prepareAdvertise(tools: readonly unknown[], limits: PrepareLimits, keepSchemas = true): PreparedAdvertise {
  const examined = Math.min(tools.length, EXAMINED_PER_TOOL * limits.maxToolsPerHost);
  const entries: ExaminedTool[] = [];
  for (let i = 0; i < examined; i++) entries.push(examineTool(tools[i], limits, keepSchemas));
  return { entries, unexamined: tools.length - examined };
}
