/**
 * Repeated keys in a configuration file. `JSON.parse` keeps the last of two equal keys in one object
 * and drops the first without a word: in a manifest's `tools` or a config's `mcpServers` that is one
 * tool or server silently shadowing another (issue 14: "never a silent shadow"). Manifests and MCP
 * configs are refused instead, naming the key's path and line.
 */
import { type JSONPath, visit } from 'jsonc-parser';

/** Where a key appears a second time in one object. */
export interface RepeatedKey {
  /** Key path of the second occurrence, e.g. `tools.read_file` or `mcpServers.fs.env.HOME`. */
  path: string;
  /** 1-based line of the second occurrence. */
  line: number;
}

function pathText(path: JSONPath): string {
  let text = '';
  for (const segment of path) text += typeof segment === 'number' ? `[${segment}]` : text === '' ? segment : `.${segment}`;
  return text;
}

/**
 * The first key (in text order) that appears twice in one object of `text`, or `undefined`.
 * `text` is JSON that `JSON.parse` accepted; the walk does not judge syntax. One pass, keys of one
 * object kept in a set until the object ends.
 */
export function findRepeatedKey(text: string): RepeatedKey | undefined {
  const open: Set<string>[] = [];
  let found: RepeatedKey | undefined;
  visit(text, {
    onObjectBegin: () => {
      open.push(new Set());
      return found === undefined; // once found, skip the rest
    },
    onObjectEnd: () => {
      open.pop();
    },
    onObjectProperty: (property, _offset, _length, startLine, _startCharacter, pathSupplier) => {
      const keys = open[open.length - 1];
      if (keys === undefined || found !== undefined) return;
      if (keys.has(property)) found = { path: pathText([...pathSupplier(), property]), line: startLine + 1 };
      else keys.add(property);
    },
  });
  return found;
}
