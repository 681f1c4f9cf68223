// Shared by the example tools: read the input JSON from stdin (toolwire's subprocess contract),
// and run a program of this machine with the tool's stdout/stderr, exiting with its exit code.
import { spawnSync } from 'node:child_process';

export async function readInput() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8').trim();
  return text === '' ? {} : JSON.parse(text);
}

export function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.error) {
    process.stderr.write(`${command}: ${result.error.message}\n`);
    process.exit(result.error.code === 'ENOENT' ? 127 : 126);
  }
  if (result.signal) process.kill(process.pid, result.signal);
  process.exit(result.status ?? 1);
}
