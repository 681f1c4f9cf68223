/**
 * `toolwire call … | head`: the reader of the CLI's stdout goes away. A real server on 127.0.0.1:0,
 * a protocol-2 tool host that streams (`packages/server/test/streaming-host.ts`) and the real
 * `toolwire` CLI in its own process. When the call had already ended, the exit status is the
 * capture's exit code (README "Failure semantics"), not 130: nothing was stopped. (A reader that
 * leaves while the call runs stops it, 130: packages/cli/test/cli.stranger.test.ts.)
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamingHost } from '../packages/server/test/streaming-host.js';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, finish, spawnTs, startServer, waitFor } from './helpers.js';

afterEach(async () => {
  await cleanup();
});

/** Bytes the tool streams: more than the CLI queues for stdout (1 MiB), so it stops reading the response. */
const CHUNK = 'x'.repeat(64 * 1024);
const CHUNKS = 32;

describe('toolwire call whose stdout reader goes away after the call ended', () => {
  it("exits with the capture's exit code (3), not 130, and says nothing of a stop", async () => {
    const { server, url, mcpUrl } = await startServer();
    let started = false;
    let cancelled: Promise<unknown> | undefined;
    const host = await StreamingHost.connect(url, {
      token: HOST_TOKEN,
      tools: [{ name: 'dump', inputSchema: { type: 'object' } }],
      onCall: async (call) => {
        started = true;
        cancelled = call.cancelled;
        for (let i = 0; i < CHUNKS; i++) await call.write('stdout', CHUNK);
        call.end(3, { stderr: 'warning\n' });
      },
    });
    defer(() => host.ws.terminate());

    // stdout is never read: the pipe fills, and the answer waits unread behind the output.
    const child = spawnTs([cliPath, 'call', 'alpha__dump', '--server', mcpUrl, '--token', CALLER_TOKEN]);
    await waitFor(() => started && server.executor.inFlight === 0, 'the call to end on the server (exit 3)', 15_000);
    child.stdout!.destroy(); // the reader leaves, as `head` does
    const { code, stderr } = await finish(child, 15_000);

    expect(stderr).not.toMatch(/EPIPE|at .*\(node:/);
    expect(stderr).not.toContain('the call was stopped');
    expect(code).toBe(3);
    expect(await Promise.race([cancelled!, Promise.resolve('not cancelled')])).toBe('not cancelled'); // the host was never told to stop
  });

  it('a reader that leaves while the call runs stops it: 130 with one line, the host told to stop, the exit not left to the wind-down bound', async () => {
    const { url, mcpUrl } = await startServer();
    let stopped: Promise<unknown> | undefined;
    const host = await StreamingHost.connect(url, {
      token: HOST_TOKEN,
      tools: [{ name: 'yes', inputSchema: { type: 'object' } }],
      onCall: async (call) => {
        stopped = call.cancelled;
        let stop: unknown;
        while (stop === undefined) stop = await Promise.race([call.write('stdout', 'y\n'.repeat(4096)).then(() => undefined), call.cancelled]);
        call.end(130, { stderr: 'toolwire: cancelled by stop\n' });
      },
    });
    defer(() => host.ws.terminate());

    const child = spawnTs([cliPath, 'call', 'alpha__yes', '--server', mcpUrl, '--token', CALLER_TOKEN]);
    await once(child.stdout!, 'data');
    const left = Date.now();
    child.stdout!.destroy();
    const { code, stderr } = await finish(child, 15_000);

    expect(code).toBe(130);
    expect(stderr).toBe('toolwire: stdout was closed (its reader went away); the call was stopped\n');
    expect(await stopped).toBe('stop');
    expect(Date.now() - left).toBeLessThan(2_500); // the session's end closed the response, not the 3 s bound
  });
});
