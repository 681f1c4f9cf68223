/**
 * Bench floor for subprocess tools: `child_process.spawn('cat')` timed in this one process, the
 * input JSON written to its stdin, stdout collected until the process has closed.
 */
import { spawn } from 'node:child_process';
import { makeInput, runSegment } from '../load.js';
import { processInfo, send, serve } from './ipc.js';

function cat(text: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'pipe'] });
    let bytes = 0;
    child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length));
    child.on('error', (error) => resolve(error.message));
    child.on('close', (code) => resolve(code === 0 && bytes === Buffer.byteLength(text) ? undefined : `exit ${code}, ${bytes} bytes`));
    child.stdin.end(text);
  });
}

serve(async (command) => {
  switch (command.cmd) {
    case 'load': {
      const text = JSON.stringify(makeInput(Number(command.bytes)));
      return { segment: await runSegment(Number(command.concurrency), Number(command.count), () => cat(text), command.gc !== false) };
    }
    case 'flood': {
      // Live output (bench/live.ts): the same command, its stdout read here to the end.
      const start = performance.now();
      const bytes = await new Promise<number>((resolve, reject) => {
        const child = spawn('sh', ['-c', String(command.command)], { stdio: ['ignore', 'pipe', 'ignore'] });
        let n = 0;
        child.stdout.on('data', (chunk: Buffer) => (n += chunk.length));
        child.on('error', reject);
        child.on('close', () => resolve(n));
      });
      return { ms: performance.now() - start, bytes };
    }
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready' });
