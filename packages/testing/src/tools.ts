/**
 * The tools a test host advertises: a map of in-process handlers and subprocess commands, a
 * manifest file, or a module exporting such a map (the only forms a child process can load).
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type CommandSpec, type ToolHandler, type ToolHost, loadManifest } from '@toolwire/client';

/** An in-process tool: a handler alone (input schema `{type: "object"}`), or with its description and schema. */
export type InProcessTool = ToolHandler | { description?: string; inputSchema?: Record<string, unknown>; run: ToolHandler };

/** Tools by name: in-process tools, or subprocess tools (`{command: [...]}`, as `ToolHost.command` takes them). */
export type ToolMap = Record<string, InProcessTool | (Omit<CommandSpec, 'inputSchema'> & { inputSchema?: Record<string, unknown> })>;

/**
 * What {@link startHost} advertises: a {@link ToolMap} (in this process only), or a path — a
 * manifest (`.json`) or a module (`.js`, `.mjs`, `.ts`…) whose `tools` export is a ToolMap.
 */
export type HostTools = ToolMap | string;

const OBJECT = { type: 'object' } as const;

/**
 * Check the shape of `tools` before anything is opened for them: a path, or a map whose every entry is
 * a handler, `{run}` or `{command: [...]}`. (What the host itself refuses — a bad name, an empty
 * command — is found by {@link registerTools}.)
 * @throws TypeError otherwise
 */
export function checkTools(tools: HostTools): void {
  if (typeof tools === 'string') return;
  if (typeof tools !== 'object' || tools === null || Array.isArray(tools)) {
    throw new TypeError(
      `startHost: tools must be a map of tools or a manifest/module path, got ${tools === null ? 'null' : Array.isArray(tools) ? 'an array' : typeof tools}`,
    );
  }
  for (const [name, tool] of Object.entries(tools)) {
    const ok =
      typeof tool === 'function' ||
      (typeof tool === 'object' && tool !== null && (('run' in tool && typeof tool.run === 'function') || ('command' in tool && Array.isArray(tool.command))));
    if (!ok) throw new TypeError(`startHost: tool ${name} must be a handler, {run}, or {command}`);
  }
}

/** Register `tools` on `host`. @throws TypeError on a tool that is neither a handler, `{run}` nor `{command}` */
export async function registerTools(host: ToolHost, tools: HostTools): Promise<void> {
  if (typeof tools === 'string') {
    const path = isAbsolute(tools) ? tools : resolve(tools);
    if (path.endsWith('.json')) {
      for (const spec of await loadManifest(path)) host.command(spec.name, spec);
      return;
    }
    const module = (await import(pathToFileURL(path).href)) as { tools?: ToolMap; default?: ToolMap };
    const map = module.tools ?? module.default;
    if (map === undefined || typeof map !== 'object') throw new TypeError(`startHost: ${path} exports no \`tools\` map`);
    return registerTools(host, map);
  }
  checkTools(tools);
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool === 'function') host.tool(name, { inputSchema: OBJECT }, tool);
    else if ('run' in tool && typeof tool.run === 'function') {
      host.tool(name, { ...(tool.description !== undefined && { description: tool.description }), inputSchema: tool.inputSchema ?? OBJECT }, tool.run);
    } else if ('command' in tool && Array.isArray(tool.command)) host.command(name, { ...tool, inputSchema: tool.inputSchema ?? OBJECT });
    else throw new TypeError(`startHost: tool ${name} must be a handler, {run}, or {command}`);
  }
}
