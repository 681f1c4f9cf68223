/**
 * The orphan reaper of a tool-host process (DESIGN §6 "no process outlives its call", §7).
 *
 * Subprocess tools run in their own process groups, so they survive their tool host. When the host
 * ends normally it kills each group itself; when it is killed (SIGKILL, OOM killer, crash) no code
 * of it runs. The reaper covers that case for the tools of both spawn paths — spawned here, or by
 * the spawn helper, which may die at the same moment as the host. It is a tiny detached `/bin/sh`
 * (its own session: a signal to the host's group or session does not reach it) whose stdin is a
 * pipe from the host, the write end held by the host alone — the lifeline. Nothing is ever written
 * to it: the reaper sleeps in `read` until EOF, when the host process is gone, however it ended.
 *
 * What to kill is kept in a registry file in a private folder (`mkdtemp`, mode 0700), appended to
 * with a synchronous write(2) — so an entry is on record before the next statement runs, and a
 * registration wakes no other process. Before each spawn the host records the call id the tool
 * will carry (`TOOLWIRE_CALL_ID`), after it the tool's process group, and when the group is gone it
 * says so. At EOF the reaper reads the registry, SIGKILLs every group still registered and, on
 * Linux, every process whose environment carries a call id whose group was never registered (a
 * host, or its spawn helper, killed in the instant between the fork and the registration: the
 * tool's environment is already set then), removes the folder and exits. The registry is rewritten
 * with only what is current whenever it passes {@link COMPACT_BYTES}.
 *
 * One reaper per process, started with the first subprocess tool (again with the next one if it
 * died); it never keeps the process alive. Without `/bin/sh` or a writable temporary folder it is
 * disabled and nothing else changes. Limits: a process that leaves its group (`setsid`,
 * `setpgid`) and drops `TOOLWIRE_CALL_ID` is out of reach; so are the tools of a host whose reaper
 * was killed too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The reaper program; `$1` is the registry's folder. Registry lines: `?<id>` a tool of call <id> is
 * about to be spawned; `+<pgid> <id>` it runs as group <pgid>; `!<id>` it was never spawned;
 * `-<pgid>` its group is gone. Only `[A-Za-z0-9._-]` ids and digits are ever written there.
 */
const SCRIPT = [
  'while read -r _; do :; done',
  'set=" "; ids=" "',
  'while IFS= read -r line; do',
  '  case "$line" in',
  '    \'?\'*) ids="$ids${line#?} " ;;',
  '    +*) r="${line#+}"; p="${r%% *}"; i="${r#* }"; set="$set$p "',
  '        case "$ids" in *" $i "*) ids="${ids%% $i *} ${ids#* $i }" ;; esac ;;',
  '    \'!\'*) i="${line#?}"; case "$ids" in *" $i "*) ids="${ids%% $i *} ${ids#* $i }" ;; esac ;;',
  '    -*) p="${line#-}"; case "$set" in *" $p "*) set="${set%% $p *} ${set#* $p }" ;; esac ;;',
  '  esac',
  'done < "$1/registry"',
  'for p in $set; do kill -9 -"$p" 2>/dev/null; done',
  'for i in $ids; do for n in 1 2; do',
  '  for f in $(grep -lzx "TOOLWIRE_CALL_ID=$i" /proc/[0-9]*/environ 2>/dev/null); do',
  '    p="${f#/proc/}"; p="${p%/environ}"; kill -9 -"$p" 2>/dev/null || kill -9 "$p" 2>/dev/null',
  '  done',
  'done; done',
  'rm -f "$1/registry" "$1/registry.new"; rmdir "$1" 2>/dev/null',
].join('\n');

/** Call ids the reaper may search for: what `TOOLWIRE_CALL_ID` carries for server-minted ids. */
const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The registry is rewritten with only its current entries once this many bytes were appended. */
const COMPACT_BYTES = 64 * 1024;

/** The running reaper, if any. */
let reaper: ChildProcess | undefined;
/** The registry: its folder, the open file (append), bytes appended since it was last rewritten. */
let registry: { dir: string; fd: number; bytes: number } | undefined;
/** Groups registered now, and call ids announced and not yet resolved: what a rewrite keeps. */
const groups = new Set<number>();
const announced = new Map<string, number>();
/** Set when `/bin/sh` or the registry cannot be had: the reaper stays off for this process. */
let disabled = false;

/** The registry's folder and file, made once per process. */
function openRegistry(): boolean {
  if (registry !== undefined) return true;
  try {
    const dir = mkdtempSync(join(tmpdir(), 'toolwire-reaper-'));
    registry = { dir, fd: openSync(join(dir, 'registry'), 'a', 0o600), bytes: 0 };
    return true;
  } catch {
    disabled = true;
    return false;
  }
}

function start(): void {
  if (disabled || process.platform === 'win32' || !openRegistry()) return;
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', SCRIPT, 'toolwire-reaper', registry!.dir], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
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
}

/**
 * Append `text` to the registry now, with a synchronous write(2): a host killed right after still
 * has it on record. Past {@link COMPACT_BYTES} the registry is rewritten with what is current (a
 * new file renamed over the old one: the reaper reads one or the other, whole).
 */
function record(text: string): void {
  const r = registry;
  if (r === undefined) return;
  try {
    writeSync(r.fd, text);
    r.bytes += text.length;
    if (r.bytes > COMPACT_BYTES) rewrite(r);
  } catch {
    // The folder was removed (a temp cleaner) or the disk is full: rewrite it whole, or give up quietly.
    try {
      rewrite(r);
    } catch {
      // nothing more to do; the spawn helper and the host still kill their tools themselves
    }
  }
}

function rewrite(r: { dir: string; fd: number; bytes: number }): void {
  let text = '';
  for (const pgid of groups) text += `+${pgid} _\n`;
  for (const [id, n] of announced) text += `?${id}\n`.repeat(n);
  const file = join(r.dir, 'registry');
  writeFileSync(`${file}.new`, text, { mode: 0o600 });
  renameSync(`${file}.new`, file);
  closeSync(r.fd);
  r.fd = openSync(file, 'a', 0o600);
  r.bytes = text.length;
}

function unannounce(id: string): void {
  const n = (announced.get(id) ?? 1) - 1;
  if (n <= 0) announced.delete(id);
  else announced.set(id, n);
}

/**
 * Call right before spawning the tool of call `callId` (its `TOOLWIRE_CALL_ID`): starts the reaper if
 * needed and announces the tool. Returns the function to call right after the spawn with the
 * child's pid (its process group, as it was spawned `detached`), or `undefined` when it did not start.
 */
export function toolStarting(callId: string): (pid: number | undefined) => void {
  if (reaper === undefined) start();
  const id = SAFE_ID.test(callId) ? callId : undefined;
  if (id !== undefined) {
    announced.set(id, (announced.get(id) ?? 0) + 1);
    record(`?${id}\n`);
  }
  return (pid) => {
    if (id !== undefined) unannounce(id);
    if (pid === undefined || pid <= 0) {
      if (id !== undefined) record(`!${id}\n`);
      return;
    }
    groups.add(pid);
    record(`+${pid} ${id ?? '_'}\n`);
  };
}

/** Unregister group `pgid` (it was killed and its call answered). */
export function forgetGroup(pgid: number | undefined): void {
  if (pgid === undefined || !groups.delete(pgid)) return;
  record(`-${pgid}\n`);
}

/** Test seam: the pid of the running reaper, if any. */
export function reaperPid(): number | undefined {
  return reaper?.pid;
}
