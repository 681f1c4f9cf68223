/**
 * `startServer`: a real `ToolwireServer` on 127.0.0.1 port 0 with generated credentials, for a test.
 */
import {
  type ExecuteRequest,
  type ExecuteResult,
  type HostCredential,
  type Logger,
  ToolwireServer,
  type ToolwireServerOptions,
  generateToken,
} from '@toolwire/server';
import { track, untrack } from './cleanup.js';

/** Options of {@link startServer}: every `ToolwireServerOptions` (hosts and callers are added to the generated ones). */
export interface StartServerOptions extends ToolwireServerOptions {
  /** Name of the generated caller (the agent id of {@link TestServer.call}); default `agent`. */
  caller?: string;
}

/** Options of {@link TestServer.call}: an `ExecuteRequest` without `name` and `input`. */
export type CallOptions = Partial<Omit<ExecuteRequest, 'name' | 'input'>>;

/** A running server for a test. `await using` closes it. */
export interface TestServer extends AsyncDisposable {
  readonly server: ToolwireServer;
  /** Where tool hosts dial, e.g. `ws://127.0.0.1:41234`. */
  readonly url: string;
  /** The MCP door, e.g. `http://127.0.0.1:41234/mcp`. */
  readonly mcpUrl: string;
  readonly port: number;
  /** The generated caller's name (agent id) and token, for the MCP door. */
  readonly caller: string;
  readonly callerToken: string;
  readonly executor: ToolwireServer['executor'];
  readonly router: ToolwireServer['router'];
  /**
   * The token of host identity `name`, created on first use (the server's credentials are updated
   * at once; sessions of other hosts are kept). The same name gives the same token.
   * @throws TypeError for a name the server refuses (`[A-Za-z0-9-]`, single `_`, no `__`)
   */
  hostToken(name: string): Promise<string>;
  /** Run `name` through the executor as the generated caller (`agent`): `executor.execute({name, input, agent, ...options})`. */
  call(name: string, input?: unknown, options?: CallOptions): Promise<ExecuteResult>;
  /** Close the server (hosts closed 1001, calls settled); idempotent. */
  close(): Promise<void>;
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** A random token of 32 URL-safe characters, never starting with `-` (`@toolwire/server`'s). */
export { generateToken };

/**
 * Start a real `ToolwireServer` on 127.0.0.1, port 0, with a generated caller (`agent`, grant `*`)
 * and host identities made on demand ({@link TestServer.hostToken}). Logging is off unless
 * `options.logger` is given.
 * @throws as `ToolwireServer` (TypeError/RangeError) on a bad option
 */
export async function startServer(options: StartServerOptions = {}): Promise<TestServer> {
  const { caller = 'agent', ...serverOptions } = options;
  const callerToken = generateToken();
  const hosts: HostCredential[] = [...(serverOptions.hosts ?? [])];
  const callers = [...(serverOptions.callers ?? []), { name: caller, token: callerToken }];
  const server = new ToolwireServer({ logger: silent, ...serverOptions, hosts, callers });
  const address = await server.listen(0, '127.0.0.1');
  let queue = Promise.resolve();
  const tokens = new Map<string, Promise<string>>(hosts.flatMap((h) => (h.token === undefined ? [] : [[h.name, Promise.resolve(h.token)] as const])));
  let closing: Promise<void> | undefined;
  const handle: TestServer = {
    server,
    url: address.url,
    mcpUrl: address.mcpUrl,
    port: address.port,
    caller,
    callerToken,
    executor: server.executor,
    router: server.router,
    hostToken(name) {
      let made = tokens.get(name);
      if (made === undefined) {
        const token = generateToken();
        // One update at a time, each with every identity made so far.
        made = queue.then(async () => {
          hosts.push({ name, token });
          try {
            await server.updateCredentials(hosts, callers);
          } catch (error) {
            hosts.pop();
            tokens.delete(name);
            throw error;
          }
          return token;
        });
        tokens.set(name, made);
        queue = made.then(
          () => undefined,
          () => undefined,
        );
      }
      return made;
    },
    call: (name, input = {}, callOptions = {}) => server.executor.execute({ agent: caller, ...callOptions, name, input }),
    close() {
      closing ??= server.close().then(() => untrack(handle));
      return closing;
    },
    [Symbol.asyncDispose]: () => handle.close(),
  };
  return track(handle);
}
