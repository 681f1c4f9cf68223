/**
 * Issue 16, traces with a real OpenTelemetry SDK (`@opentelemetry/sdk-trace-base`, in-memory
 * exporter) registered by the embedding program — here the test: the server's and the tool host's
 * `toolwire.call` spans have the right names, kinds, scopes and attributes; the caller's
 * `traceparent` is the server span's parent, the server span's context crosses to the host (the host
 * span's parent) and the host span's context reaches the subprocess tool (`TRACEPARENT`); the exit
 * code comes back into both spans (ERROR status for a non-zero one). Server and host run in this
 * process so one exporter sees both.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ToolHost } from '@toolwire/client';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

const HOST_TOKEN = 'otel-host-token-aaaaaaaaaaaaaaaaaaaaaa';
const CALLER_TOKEN = 'otel-caller-token-cccccccccccccccccccc';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
const silent = pino({ level: 'silent' });

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** An SDK with an in-memory exporter, registered as the global tracer provider until cleanup. */
function registerSdk(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
  cleanups.push(async () => {
    trace.disable();
    await provider.shutdown();
  });
  return exporter;
}

/** The one finished span of `scope` whose `toolwire.call_id` is `id`. */
function spanOf(spans: ReadableSpan[], scope: string, id: string): ReadableSpan {
  const found = spans.filter((s) => s.instrumentationScope.name === scope && s.attributes['toolwire.call_id'] === id);
  expect(found, `${scope} spans of call ${id}`).toHaveLength(1);
  return found[0]!;
}

describe('traces with the OpenTelemetry SDK registered (issue 16)', () => {
  it('the server and host make toolwire.call spans with their attributes, and the trace context crosses caller → server → host → tool and the exit code comes back', async () => {
    const exporter = registerSdk();
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }], logger: silent });
    const { url } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    const host = new ToolHost({ server: url, token: HOST_TOKEN, logger: silent, reconnect: false })
      .command('ctx', { inputSchema: { type: 'object' }, command: ['sh', '-c', 'printf %s "$TRACEPARENT"'] })
      .command('fail', { inputSchema: { type: 'object' }, command: ['sh', '-c', 'exit 3'] });
    await host.start();
    cleanups.push(() => host.close());

    const ok = await server.executor.execute({ name: 'alpha__ctx', input: {}, agent: 'agent', traceparent: TRACEPARENT });
    const failed = await server.executor.execute({ name: 'alpha__fail', input: {}, agent: 'agent', traceparent: TRACEPARENT });
    if (ok.outcome !== 'completed' || failed.outcome !== 'completed') throw new Error('calls did not complete');
    expect(ok.capture.exitCode).toBe(0);
    expect(failed.capture.exitCode).toBe(3);

    const spans = exporter.getFinishedSpans();
    const serverSpan = spanOf(spans, '@toolwire/server', ok.id);
    const hostSpan = spanOf(spans, '@toolwire/client', ok.id);
    // The server's span: a child of the caller's traceparent, with tool, agent, call id, host, exit code.
    expect(serverSpan.name).toBe('toolwire.call');
    expect(serverSpan.kind).toBe(SpanKind.SERVER);
    expect(serverSpan.spanContext().traceId).toBe(TRACE_ID);
    expect(serverSpan.parentSpanContext).toMatchObject({ traceId: TRACE_ID, spanId: CALLER_SPAN, isRemote: true });
    expect(serverSpan.attributes).toEqual({
      'toolwire.tool': 'alpha__ctx',
      'toolwire.agent': 'agent',
      'toolwire.call_id': ok.id,
      'toolwire.host': 'alpha',
      'toolwire.exit_code': 0,
    });
    expect(serverSpan.status.code).toBe(SpanStatusCode.UNSET);
    // The host's span: its parent is the server's span (the traceparent crossed in the call frame).
    expect(hostSpan.name).toBe('toolwire.call');
    expect(hostSpan.kind).toBe(SpanKind.SERVER);
    expect(hostSpan.spanContext().traceId).toBe(TRACE_ID);
    expect(hostSpan.parentSpanContext).toMatchObject({ traceId: TRACE_ID, spanId: serverSpan.spanContext().spanId, isRemote: true });
    expect(hostSpan.attributes).toEqual({ 'toolwire.tool': 'ctx', 'toolwire.call_id': ok.id, 'toolwire.exit_code': 0 });
    // The tool got the host span's context.
    expect(Buffer.from(ok.capture.stdout).toString()).toBe(`00-${TRACE_ID}-${hostSpan.spanContext().spanId}-01`);

    // A non-zero exit code comes back into both spans as an ERROR status.
    for (const scope of ['@toolwire/server', '@toolwire/client']) {
      const span = spanOf(spans, scope, failed.id);
      expect(span.attributes['toolwire.exit_code']).toBe(3);
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'exit code 3' });
      expect(span.spanContext().traceId).toBe(TRACE_ID);
    }
  });
});
