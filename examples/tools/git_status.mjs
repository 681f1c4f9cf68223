import { readInput, run } from './_lib.mjs';
const { repo = '.' } = await readInput();
run('git', ['-C', repo, 'status', '--short', '--branch']);
