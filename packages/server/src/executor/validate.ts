/**
 * Step 3 of the executor (DESIGN §3), input validation: a call's input against the inputSchema its
 * tool advertised, compiled once per advertised tool object.
 */
import { type Capture, failureCapture } from '@toolwire/protocol';
import { type Compiled, checkInput, compileInputSchema } from '../registry/schema-cache.js';
import type { InjectedTool } from '../seam.js';
import { message, quote } from './reason-text.js';

/**
 * Tools by name, built once per distinct `tools()` array: the router returns the same frozen array
 * until `toolsChanged`, so the per-call lookup is O(1) rather than a scan of every host's tools.
 */
const indexes = new WeakMap<readonly InjectedTool[], Map<string, InjectedTool>>();
export function toolIndex(tools: readonly InjectedTool[]): Map<string, InjectedTool> {
  let index = indexes.get(tools);
  if (index === undefined) {
    index = new Map();
    for (const tool of tools) if (!index.has(tool.name)) index.set(tool.name, tool);
    indexes.set(tools, index);
  }
  return index;
}

/** The compiled inputSchema of each advertised tool object (the router hands out the same frozen objects until a change). */
const compiledOf = new WeakMap<InjectedTool, Compiled>();

/**
 * Capture 65 when `input` fails the inputSchema `name`'s tool advertised in `tools` (70 when that
 * schema cannot be compiled, or validation throws); `undefined` when valid or when no tool of
 * `tools` has that name (the router or the fallback answers it).
 */
export function validateInput(tools: readonly InjectedTool[], name: string, input: unknown): Capture | undefined {
  try {
    const tool = toolIndex(tools).get(name);
    if (!tool) return undefined;
    let compiled = compiledOf.get(tool);
    if (compiled === undefined) {
      compiled = compileInputSchema(tool.inputSchema);
      compiledOf.set(tool, compiled);
    }
    if (!compiled.ok) return failureCapture('host_error', `inputSchema of ${quote(name)} cannot be compiled: ${compiled.reason}`);
    const errors = checkInput(compiled.validate, input);
    return errors === undefined ? undefined : failureCapture('invalid_input', `input does not match the inputSchema of ${quote(name)}: ${errors}`);
  } catch (error) {
    return failureCapture('host_error', `input validation failed: ${message(error)}`);
  }
}
