import { readInput, run } from './_lib.mjs';
const { seconds = 10 } = await readInput();
process.stdout.write(`sleeping ${seconds} s\n`);
run('sleep', [String(seconds)]);
