/** Whether a listen address can be reached from other machines. */
import { isIP } from 'node:net';

/** Whether `host` (as given to `--listen`) is a loopback address or `localhost`: reachable from this machine only. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}
