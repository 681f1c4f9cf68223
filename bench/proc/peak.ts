/**
 * Peak RSS of a process that can be reset between bench arms: `VmHWM` of `/proc/<pid>/status`,
 * reset by writing `5` to `/proc/<pid>/clear_refs` (Linux). KiB.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** `VmHWM` and `VmRSS` of `pid` (default this process), KiB; zeros when unreadable. */
export function memoryKiB(pid: number | 'self' = 'self'): { peakKiB: number; rssKiB: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { peakKiB: kib('VmHWM'), rssKiB: kib('VmRSS') };
  } catch {
    return { peakKiB: 0, rssKiB: 0 };
  }
}

/** Reset the peak of `pid` to its current RSS. */
export function resetPeak(pid: number | 'self' = 'self'): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Not Linux, or not ours: the peak stays the process's lifetime peak.
  }
}
