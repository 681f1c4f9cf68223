/**
 * One object per distinct advertised tool spec. The hosts of a fleet mostly advertise the same
 * tools (one manifest on many machines), and every advertise arrives as fresh objects parsed from
 * its frame (or from the offload worker's answer): kept as they came, each host carried its own copy
 * of every schema, its JSON text and its description — most of a connected host's memory on the
 * server. Equal specs (same name, description and schema text) share the first one seen, held
 * weakly: it is forgotten once no host's tool uses it. Specs are never mutated once registered.
 */
import type { ToolSpec } from '@toolwire/protocol';

/** A spec and its schema's JSON text, as the registry keeps them. */
export interface InternedTool {
  spec: ToolSpec;
  text: string;
}

const specs = new Map<string, WeakRef<ToolSpec>>();
const texts = new WeakMap<ToolSpec, string>();
const forget = new FinalizationRegistry<string>((key) => {
  if (specs.get(key)?.deref() === undefined) specs.delete(key);
});

/** The shared spec (and schema text) equal to `spec` with schema text `text`; `spec` itself the first time. */
export function internTool(spec: ToolSpec, text: string): InternedTool {
  const own = texts.get(spec); // this very object is the shared one (a spec handed out again, `toolSpecOf`)
  if (own !== undefined) return { spec, text: own };
  // name has no NUL (validated); the description's presence is part of the key.
  const key = `${spec.name}\0${spec.description === undefined ? '-' : `+${spec.description}`}\0${text}`;
  const known = specs.get(key)?.deref();
  if (known !== undefined) return { spec: known, text: texts.get(known) ?? text };
  specs.set(key, new WeakRef(spec));
  texts.set(spec, text);
  forget.register(spec, key);
  return { spec, text };
}

/** Distinct specs currently remembered (for tests). */
export function internedSpecs(): number {
  return specs.size;
}
