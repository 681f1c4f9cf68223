/**
 * Closing the disk records a stopped server left open (issue 11 §5). A server killed with calls in
 * flight (SIGKILL, a crash, power loss) leaves `<root>/<agent>/<id>/input.json` without
 * `output.json`. At the next start each such record is completed with an `output.json` whose capture
 * is 69 (`failure: "unavailable"`) with stderr `toolwire: the server stopped while the call was in
 * flight` and `"interrupted": true`; `startedAt` is `input.json`'s modification time and `endedAt`
 * the time of the closing. The temp files of a write the stop cut short (`*.json.<hex>.tmp`) are
 * removed from those records. Written like every record (temp file, then rename): never half-written.
 *
 * A call that ended but whose `output.json` could not be written (a full disk, EIO) left
 * `input.ended.<exit code>.json` (its `input.json` renamed, `record.ts`) instead: such a record is
 * completed with capture 70 (`failure: "host_error"`, the server failed to record it) whose reason
 * line names the exit code the caller got (`OUTPUT_LOST_REASON`), no `interrupted`; `startedAt` is the
 * marker's modification time (the rename keeps `input.json`'s), `endedAt` its status-change time (the
 * rename, when the call ended); then the marker is renamed back to `input.json`.
 *
 * Only directories whose names are valid agent and call ids are visited (symbolic links are not
 * followed); a record whose call is in flight in this process is left alone.
 */
import { type Dirent, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { failureCapture } from '@toolwire/protocol';
import { type DiskRecord, ENDED_FILE, SEGMENT_PATTERN, TEMP_FILE } from './record.js';

/** The reason line of an interrupted call's capture (after `toolwire: `). */
export const INTERRUPTED_REASON = 'the server stopped while the call was in flight';

/** The reason line (after `toolwire: `) of a call that ended with `exitCode` but whose `output.json` could not be written. */
export const OUTPUT_LOST_REASON = (exitCode: number): string =>
  `the call ended with exit code ${exitCode}, but its output.json could not be written; its output is not recorded`;

/** Call directories examined at once. */
const BATCH = 32;

/** What {@link closeInterruptedRecords} did. */
export interface RecoveryReport {
  /** Records completed with an interrupted `output.json`. */
  closed: number;
  /** Records of calls that ended but whose `output.json` could not be written, completed with capture 70. */
  outputLost: number;
  /** Temp files of cut-short writes removed. */
  tempFilesRemoved: number;
  /** Records that could not be examined or completed (each logged by the caller through `onError`). */
  failed: number;
}

/** A directory name that is a valid agent or call id. */
const isSegment = (entry: Dirent): boolean => entry.isDirectory() && SEGMENT_PATTERN.test(entry.name) && entry.name !== '.' && entry.name !== '..';

/** The entries of `dir`; `[]` when it does not exist. */
async function entries(dir: string): Promise<Dirent[]> {
  try {
    return await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Complete every record under `record`'s root that has `input.json` (or the marker
 * `input.ended.<code>.json`) and no `output.json`, unless
 * `live(agent, id)` (a call of this process still in flight). Never rejects: an unreadable
 * directory or a failed write is passed to `onError` and counted in `failed`.
 */
export async function closeInterruptedRecords(
  record: DiskRecord,
  live: (agent: string, id: string) => boolean,
  onError: (error: unknown, path: string) => void,
  now: () => Date = () => new Date(),
): Promise<RecoveryReport> {
  const report: RecoveryReport = { closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 };
  const closeOne = async (agent: string, id: string): Promise<void> => {
    const dir = join(record.root, agent, id);
    try {
      const names = new Set((await entries(dir)).filter((e) => e.isFile()).map((e) => e.name));
      const marker = names.has('input.json') ? undefined : [...names].find((name) => ENDED_FILE.test(name));
      if ((!names.has('input.json') && marker === undefined) || live(agent, id)) return;
      if (names.has('output.json') && marker === undefined) return;
      for (const name of names) {
        if (!TEMP_FILE.test(name)) continue;
        await fs.rm(join(dir, name), { force: true });
        report.tempFilesRemoved++;
      }
      if (marker === undefined) {
        const { mtime } = await fs.stat(join(dir, 'input.json'));
        await record.writeOutput(agent, id, failureCapture('unavailable', INTERRUPTED_REASON), mtime, now(), true);
        report.closed++;
        return;
      }
      // output.json already there: an earlier recovery stopped before renaming the marker back.
      if (!names.has('output.json')) {
        const { mtime, ctime } = await fs.stat(join(dir, marker));
        const exitCode = Number(ENDED_FILE.exec(marker)![1]);
        await record.writeOutput(agent, id, failureCapture('host_error', OUTPUT_LOST_REASON(exitCode)), mtime, ctime);
        report.outputLost++;
      }
      await fs.rename(join(dir, marker), join(dir, 'input.json'));
    } catch (error) {
      report.failed++;
      onError(error, dir);
    }
  };
  let agents: Dirent[];
  try {
    agents = (await entries(record.root)).filter(isSegment);
  } catch (error) {
    report.failed++;
    onError(error, record.root);
    return report;
  }
  for (const agent of agents) {
    let calls: Dirent[];
    try {
      calls = (await entries(join(record.root, agent.name))).filter(isSegment);
    } catch (error) {
      report.failed++;
      onError(error, join(record.root, agent.name));
      continue;
    }
    for (let i = 0; i < calls.length; i += BATCH) {
      await Promise.all(calls.slice(i, i + BATCH).map((call) => closeOne(agent.name, call.name)));
    }
  }
  return report;
}
