// Bench helper for the `cli` scenario: a real ToolHost from the built `@toolwire/client` (plain node,
// no TypeScript loader) advertising one trivial in-process tool, `echo` (stdout = the input JSON).
// Env: BENCH_URL (ws://…), BENCH_TOKEN (host token). Prints "ready" once the server accepted the tool.
import { ToolHost } from '@toolwire/client';

const silent = { debug() {}, info() {}, warn() {}, error: (obj, msg) => console.error('cli-echo-host:', msg ?? '', obj) };
const host = new ToolHost({ server: process.env.BENCH_URL, token: process.env.BENCH_TOKEN, reconnect: false, logger: silent });
host.tool('echo', { description: 'stdout = the input JSON', inputSchema: { type: 'object' } }, (input) => JSON.stringify(input));
await host.start();
process.stdout.write('ready\n');
const stop = () => void host.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
