/**
 * What the kit has open: every handle it returns is tracked here until it is closed, so
 * {@link closeAll} can close what a test forgot, and child processes are killed when the test
 * runner's process exits (an `exit` hook: only synchronous work is possible there, so servers and
 * sockets simply end with the process; the children are SIGKILLed with their process groups, then
 * the network namespaces of the netns mode are deleted).
 */
import type { ChildProcess } from 'node:child_process';

/** Anything the kit opens and can close. */
export interface Closeable {
  close(): Promise<void>;
}

const open = new Set<Closeable>();
const children = new Set<ChildProcess>();
/** What must be undone synchronously at exit after the children are killed (network namespaces). */
const removables = new Set<{ remove(): void }>();
let hooked = false;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  for (const target of [-child.pid, child.pid]) {
    try {
      process.kill(target, 'SIGCONT'); // a paused child must run to die of SIGKILL promptly… and to be reaped
      process.kill(target, 'SIGKILL');
    } catch {
      // already gone, or no group of that id
    }
  }
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const child of children) killGroup(child);
    for (const removable of removables) removable.remove();
  });
}

/** Track `handle` until {@link untrack}; returns it. */
export function track<T extends Closeable>(handle: T): T {
  open.add(handle);
  return handle;
}

/** Forget `handle` (it closed). */
export function untrack(handle: Closeable): void {
  open.delete(handle);
}

/** Track a child process: SIGKILLed with its group if still running when this process exits. */
export function trackChild(child: ChildProcess): void {
  hookExit();
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Call `removable.remove()` (synchronous) when this process exits, unless {@link offExit} came first. */
export function onExit(removable: { remove(): void }): void {
  hookExit();
  removables.add(removable);
}

/** Forget `removable` (it was removed). */
export function offExit(removable: { remove(): void }): void {
  removables.delete(removable);
}

/** SIGKILL `child` and its process group (SIGCONT first, so a stopped child dies too). */
export function killChild(child: ChildProcess): void {
  killGroup(child);
}

/**
 * Close every handle of the kit still open (servers, hosts, proxies, rogue hosts), newest first.
 * Call it in an `afterAll`/`after` hook as a safety net; handles closed before are skipped.
 * Resolves when all are closed; a handle whose close fails does not stop the others (the first
 * error is thrown at the end).
 */
export async function closeAll(): Promise<void> {
  let first: Error | undefined;
  for (const handle of [...open].reverse()) {
    try {
      await handle.close();
    } catch (error) {
      first ??= error instanceof Error ? error : new Error(String(error));
    }
    open.delete(handle);
  }
  if (first !== undefined) throw first;
}

/** How many kit handles and child processes are open (a test's leak check). */
export function openHandles(): { handles: number; processes: number } {
  return { handles: open.size, processes: children.size };
}
