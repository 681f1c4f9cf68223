import { readInput, run } from './_lib.mjs';
const { path = '.' } = await readInput();
run('ls', ['-la', '--', path]);
