import { createReadStream } from 'node:fs';
import { readInput } from './_lib.mjs';
const { path, max_bytes: maxBytes } = await readInput();
const stream = createReadStream(path, maxBytes ? { start: 0, end: maxBytes - 1 } : {});
stream.on('error', (error) => {
  process.stderr.write(`read_file: ${error.message}\n`);
  process.exitCode = error.code === 'ENOENT' ? 66 : 1; // sysexits EX_NOINPUT
});
stream.pipe(process.stdout);
