/**
 * The orphan reaper of a tool-host process (DESIGN §6 "no process outlives its call", §7).
 *
 * Subprocess tools run in their own process groups, so they survive their tool host. When the host
 * ends normally it kills each group itself; when it is killed (SIGKILL, OOM killer, crash) no code
 * of it runs. The reaper covers that case: a tiny detached `/bin/sh` whose stdin is a pipe from the
 * host. The host tells it, before each spawn, the call id the tool will carry (`TOOLWIRE_CALL_ID`),
 * and after the spawn, the tool's process group; when the group is gone it says so. When the
 * reaper's stdin reaches EOF — the host process is gone, however it ended — it SIGKILLs every group
 * still registered and, on Linux, every process whose environment carries a call id whose group
 * was never registered (a host killed in the instant between the spawn and the registration: its
 * tool's environment is already set, since the pipe's write end stays open in the child until its
 * exec), then exits.
 *
 * One reaper per process, started with the first subprocess tool; it never keeps the process alive.
 * Lines are written with a synchronous write(2), so a registration is in the pipe before the next
 * statement runs. Without `/bin/sh` it is disabled and nothing else changes. Limit: a process that
 * leaves its group (`setsid`, `setpgid`) and drops `TOOLWIRE_CALL_ID` is out of reach.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeSync } from 'node:fs';

/**
 * The reaper program. Lines: `?<id>` a tool of call <id> is about to be spawned; `+<pgid> <id>` it
 * runs as group <pgid>; `!<id>` it was never spawned; `-<pgid>` its group is gone. Only
 * `[A-Za-z0-9._-]` ids and digits are ever written to it.
 */
const SCRIPT = [
  'set=" "; ids=" "',
  'while IFS= read -r line; do',
  '  case "$line" in',
  '    \'?\'*) ids="$ids${line#?} " ;;',
  '    +*) r="${line#+}"; p="${r%% *}"; i="${r#* }"; set="$set$p "',
  '        case "$ids" in *" $i "*) ids="${ids%% $i *} ${ids#* $i }" ;; esac ;;',
  '    \'!\'*) i="${line#?}"; case "$ids" in *" $i "*) ids="${ids%% $i *} ${ids#* $i }" ;; esac ;;',
  '    -*) p="${line#-}"; case "$set" in *" $p "*) set="${set%% $p *} ${set#* $p }" ;; esac ;;',
  '  esac',
  'done',
  'for p in $set; do kill -9 -"$p" 2>/dev/null; done',
  'for i in $ids; do for n in 1 2; do',
  '  for f in $(grep -lzx "TOOLWIRE_CALL_ID=$i" /proc/[0-9]*/environ 2>/dev/null); do',
  '    p="${f#/proc/}"; p="${p%/environ}"; kill -9 -"$p" 2>/dev/null || kill -9 "$p" 2>/dev/null',
  '  done',
  'done; done',
].join('\n');

/** Call ids the reaper may search for: what `TOOLWIRE_CALL_ID` carries for server-minted ids. */
const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The running reaper, if any. */
let reaper: ChildProcess | undefined;
/** Groups registered now; replayed to a new reaper if the old one died. */
const groups = new Set<number>();
/** Set when `/bin/sh` does not exist or cannot be executed: the reaper stays off for this process. */
let disabled = false;

function start(): void {
  if (disabled || process.platform === 'win32') return;
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  } catch {
    disabled = true;
    return;
  }
  const drop = (): void => {
    if (reaper === child) reaper = undefined;
  };
  child.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' || error.code === 'EACCES') disabled = true; // else (EAGAIN…) retry at the next tool
    drop();
  });
  child.on('exit', drop);
  child.stdin?.on('error', drop);
  child.unref();
  (child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null)?.unref?.();
  reaper = child;
  if (groups.size > 0) write([...groups].map((pgid) => `+${pgid} _\n`).join(''));
}

/**
 * Write `text` into the reaper's pipe now, with a synchronous write(2) on its fd: a stream write
 * would wait for the event loop, and a host killed meanwhile would leave its newest tool
 * unregistered. Falls back to the stream when the pipe is full (EAGAIN) or the fd is not exposed.
 */
function write(text: string): void {
  const child = reaper;
  if (child === undefined) return;
  const fd = (child.stdin as unknown as { _handle?: { fd?: unknown } } | null)?._handle?.fd;
  if (typeof fd === 'number' && fd >= 0) {
    try {
      writeSync(fd, text);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') {
        if (reaper === child) reaper = undefined; // EPIPE: it died; the next tool starts a new one
        return;
      }
    }
  }
  if (child.stdin?.writable) child.stdin.write(text);
}

/**
 * Call right before spawning the tool of call `callId` (its `TOOLWIRE_CALL_ID`): starts the reaper if
 * needed and announces the tool. Returns the function to call right after the spawn with the
 * child's pid (its process group, as it was spawned `detached`), or `undefined` when it did not start.
 */
export function toolStarting(callId: string): (pid: number | undefined) => void {
  if (reaper === undefined) start();
  const id = SAFE_ID.test(callId) ? callId : undefined;
  if (id !== undefined) write(`?${id}\n`);
  return (pid) => {
    if (pid === undefined || pid <= 0) {
      if (id !== undefined) write(`!${id}\n`);
      return;
    }
    groups.add(pid);
    if (reaper === undefined)
      start(); // replays `groups`, this one included
    else write(`+${pid} ${id ?? '_'}\n`);
  };
}

/** Unregister group `pgid` (it was killed and its call answered). */
export function forgetGroup(pgid: number | undefined): void {
  if (pgid === undefined || !groups.delete(pgid)) return;
  write(`-${pgid}\n`);
}
