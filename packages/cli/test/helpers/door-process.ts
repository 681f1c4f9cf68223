/**
 * A {@link FakeDoor} in its own process, for tests that kill the server with SIGKILL: prints its port
 * on the first stdout line, then `called <name>` for every tools/call, which it never answers.
 * Usage: `node --conditions=@toolwire/source --import tsx door-process.ts TOKEN`.
 */
import { FakeDoor } from './fake-door.js';

const door = await FakeDoor.start(process.argv[2] ?? 'token', [{ name: 'alpha__hang', inputSchema: { type: 'object' } }]);
door.answer = (call) => {
  process.stdout.write(`called ${call.name}\n`);
  return new Promise(() => {});
};
process.stdout.write(`${door.port}\n`);
