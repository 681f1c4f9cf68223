/**
 * Bench floor of `bench/live.ts` (issue 13): `child_process.spawn('sh', ['-c', command])` read to the
 * end in this one process, attached (the default) or `detached` as the tool host spawns its tools
 * (a process group of their own; on Linux with autogroup scheduling also a CPU share of their own).
 */
import { spawn } from 'node:child_process';
import { send, serve } from './ipc.js';

serve(async (command) => {
  if (command.cmd !== 'flood') throw new Error(`unknown command ${command.cmd}`);
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const bytes = await new Promise<number>((resolve, reject) => {
    const child = spawn('sh', ['-c', String(command.command)], { stdio: ['ignore', 'pipe', 'ignore'], detached: command.detached === true });
    let n = 0;
    child.stdout.on('data', (chunk: Buffer) => (n += chunk.length));
    child.on('error', reject);
    child.on('close', () => resolve(n));
  });
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - start, bytes, cpuMs: (cpu.user + cpu.system) / 1000 };
});
send({ event: 'ready' });
