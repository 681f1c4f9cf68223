import { readInput, run } from './_lib.mjs';
const { pattern, path = '.', ignore_case: ignoreCase = false } = await readInput();
const args = ['-rnI', '--exclude-dir=node_modules', '--exclude-dir=.git', '--max-count=200'];
if (ignoreCase) args.push('-i');
run('grep', [...args, '-e', pattern, '--', path]);
