/**
 * The child process of `startHost(server, tools, {process: true})`: a `ToolHost` whose settings
 * arrive over IPC (never in the environment, so the token cannot reach a tool). Reports its events
 * to the parent; closes the host and exits on `{type: 'close'}` or when the parent goes away.
 */
import { ToolHost, type ToolHostOptions } from '@toolwire/client';
import { registerTools } from './tools.js';

interface StartMessage {
  type: 'start';
  options: ToolHostOptions;
  tools: string;
}

const send = (message: object): void => {
  if (process.connected) process.send!(message);
};

let host: ToolHost | undefined;
let closing = false;

async function close(code: number): Promise<void> {
  if (closing) return;
  closing = true;
  await host?.close();
  process.exit(code);
}

process.on('disconnect', () => void close(0));
process.on('message', (message: StartMessage | { type: 'close' }) => {
  if (message.type === 'close') {
    void close(0);
    return;
  }
  if (host !== undefined) return;
  const h = new ToolHost(message.options);
  host = h;
  h.on('connected', (welcome) => send({ type: 'connected', host: welcome.host }));
  h.on('advertised', (advertised) => send({ type: 'advertised', accepted: advertised.accepted, rejected: advertised.rejected }));
  h.on('disconnected', (info) => send({ type: 'disconnected', ...info }));
  h.on('error', (error) => send({ type: 'error', message: error.message }));
  registerTools(h, message.tools)
    .then(() => h.start())
    .then(
      () => send({ type: 'ready', pid: process.pid }),
      (error: unknown) => {
        send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
        void close(1);
      },
    );
});
send({ type: 'spawned' });
