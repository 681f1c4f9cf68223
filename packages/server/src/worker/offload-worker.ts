/**
 * The offload worker thread (`offload.ts` starts it): decoding large host frames and compiling
 * advertised schemas, off the event loop. One job per message, one reply per job, matched by `id`.
 * - `{kind: 'decode', id, data, limits}` → `{id, frame}`: the codec's outcome; an `advertise` comes
 *   back prepared (`prepareAdvertise`: bounded entries, cheap checks, schema texts), so what crosses
 *   back to the event loop is bounded whatever the frame held. The text is scanned first
 *   (`json-scan.ts`): entries past those examined are cut before `JSON.parse`, and a frame of more
 *   than {@link MAX_FRAME_VALUES} values is refused unparsed.
 * - `{kind: 'compile', id, texts, maxCodeBytes, budgetMs}` → `{id, results}`: per schema, standalone
 *   validator code or why it is refused (with its compile time), or `skipped` once `budgetMs` ran out.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { CloseCode, decodeHostMessage } from '@toolwire/protocol';
import type { SchemaAjv } from '../registry/ajv-setup.js';
import { EXAMINED_PER_TOOL, type PrepareLimits, prepareAdvertise } from '../registry/prepare.js';
import { cutTools, scanFrame } from './json-scan.js';
import { type CompileJob, type CompileReply, type CompileResult, type DecodeJob, type DecodeReply, MAX_FRAME_VALUES } from './jobs.js';

/** Compiles served by one ajv instance before a fresh one takes over (its tables only grow). */
const COMPILES_PER_GENERATION = 64;

function decode(job: DecodeJob): DecodeReply {
  const text = Buffer.from(job.data.buffer, job.data.byteOffset, job.data.byteLength).toString('utf8');
  const limits: PrepareLimits = job.limits;
  // Build no more than the frame needs: an advertise's entries past those examined are only counted.
  const scan = scanFrame(text, EXAMINED_PER_TOOL * limits.maxToolsPerHost, MAX_FRAME_VALUES);
  if (!scan.ok) {
    const reason = `frame of ${job.data.byteLength} bytes refused: more than ${MAX_FRAME_VALUES} JSON values`;
    return { id: job.id, frame: { ok: false, error: { fatal: true, closeCode: CloseCode.MESSAGE_TOO_BIG, reason } } };
  }
  const { text: cut, left } = cutTools(text, scan.tools);
  const decoded = decodeHostMessage(cut);
  if (!decoded.ok) return { id: job.id, frame: decoded };
  if (decoded.message.type !== 'advertise') return { id: job.id, frame: { ok: true, message: decoded.message } };
  const prepared = prepareAdvertise(decoded.message.tools, limits, false);
  prepared.unexamined += left;
  return { id: job.id, frame: { ok: true, message: { type: 'advertise', prepared } } };
}

// ajv is loaded at the first compile job: a thread that only decodes never loads it.
let setup: typeof import('../registry/ajv-setup.js') | undefined;
let ajv: SchemaAjv | undefined;
let compiles = 0;

async function compileOne(text: string, maxCodeBytes: number): Promise<CompileResult> {
  setup ??= await import('../registry/ajv-setup.js');
  const began = performance.now();
  const ms = (): number => performance.now() - began;
  if (ajv === undefined || compiles >= COMPILES_PER_GENERATION) {
    ajv = setup.newAjv({ source: true });
    compiles = 0;
  }
  compiles++;
  try {
    const { source, regexProgram } = setup.compileToSource(ajv, JSON.parse(text) as object);
    if (regexProgram > setup.MAX_REGEX_PROGRAM) return { ok: false, reason: setup.regexReason(regexProgram), ms: ms() };
    if (source.length > maxCodeBytes) {
      return { ok: false, reason: `its validator is ${source.length} bytes of code, over the limit of ${maxCodeBytes}`, ms: ms() };
    }
    return { ok: true, source, ms: ms() };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error), ms: ms() };
  }
}

async function compile(job: CompileJob): Promise<CompileReply> {
  const began = performance.now();
  const results: CompileReply['results'] = [];
  for (const text of job.texts) {
    if (performance.now() - began >= job.budgetMs) results.push({ skipped: true });
    else results.push(await compileOne(text, job.maxCodeBytes));
  }
  return { id: job.id, results };
}

/**
 * Lower this thread's CPU priority (Linux: a thread's nice value is its own; elsewhere nothing
 * happens), so the event loop and other processes go first when CPUs are short.
 */
function lowerPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch {
    // not Linux, or not allowed: run at the process's priority
  }
}

const port = parentPort!;
lowerPriority(Number((workerData as { nice?: unknown } | undefined)?.nice ?? 0));
port.on('message', (job: DecodeJob | CompileJob) => {
  if (job.kind === 'decode') port.postMessage(decode(job));
  else void compile(job).then((reply) => port.postMessage(reply));
});
port.postMessage({ ready: true });
