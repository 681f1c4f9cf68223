/**
 * The public surface of each package, pinned: the names its root exports. A new export (or a lost
 * one) fails here, so widening or narrowing an API is a visible, deliberate change. Values are read
 * from `import * as` of the package root; types too are read from the index's named re-exports
 * (every index exports by name only, no `export *`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as cli from '@toolwire/cli';
import * as client from '@toolwire/client';
import * as protocol from '@toolwire/protocol';
import * as protocolConstants from '@toolwire/protocol/constants';
import * as server from '@toolwire/server';
import * as testing from '@toolwire/testing';
import type { ToolwireServerOptions } from '@toolwire/server';
import { repoRoot } from './helpers.js';

/** Every name `packages/<pkg>/src/index.ts` exports, values and types, sorted. */
function exportedNames(pkg: string): string[] {
  const path = join(repoRoot, 'packages', pkg, 'src', 'index.ts');
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const clause = statement.exportClause;
    if (clause === undefined || !ts.isNamedExports(clause)) throw new Error(`${pkg}: the index must export by name (no export *)`);
    for (const element of clause.elements) names.push(element.name.text);
  }
  return names.sort();
}

const runtime = (module: object): string[] => Object.keys(module).sort();

describe('public API: the names each package root exports', () => {
  it('@toolwire/protocol', () => {
    expect(runtime(protocol)).toEqual([
      'CALL_ID_PATTERN',
      'CloseCode',
      'Defaults',
      'ExitCode',
      'FailureKind',
      'HeadTailBuffer',
      'MAX_CONTENT_BLOCKS',
      'MAX_NAME_LENGTH',
      'MAX_OUTPUT_FRAME_SEQ',
      'MAX_TRACESTATE_LENGTH',
      'NAME_PATTERN',
      'OUTPUT_FRAME_KIND',
      'PROTOCOL_VERSION',
      'PROTOCOL_VERSIONS',
      'QUALIFIER',
      'SIGNAL_EXIT_BASE',
      'SUBPROTOCOL',
      'SUBPROTOCOLS',
      'TRACEPARENT_PATTERN',
      'TickCoalescer',
      'TurnCoalescer',
      'appendReason',
      'checkToolSpec',
      'checkTracestate',
      'closeCodeName',
      'decodeHostMessage',
      'decodeOutputFrame',
      'decodeServerMessage',
      'encodeMessage',
      'encodeOutputFrame',
      'failureCapture',
      'formatAjvErrors',
      'formatTraceparent',
      'fromWire',
      'headTail',
      'hostMessageSchemas',
      'outputFrameHeaderBytes',
      'outputFrameInPlace',
      'parseTraceparent',
      'serverMessageSchemas',
      'subprotocolOf',
      'toWire',
      'toolSpecSchema',
      'utf8',
      'versionOfSubprotocol',
    ]);
    expect(exportedNames('protocol')).toEqual([
      'AdvertiseMessage',
      'AdvertisedMessage',
      'CALL_ID_PATTERN',
      'CallMessage',
      'CancelMessage',
      'Capture',
      'CloseCode',
      'CloseCodeValue',
      'ContentBlock',
      'Corkable',
      'CreditMessage',
      'Decoded',
      'Defaults',
      'ExitCode',
      'ExitCodeValue',
      'Failure',
      'FailureKind',
      'HeadTailBuffer',
      'HelloMessage',
      'HostMessage',
      'MAX_CONTENT_BLOCKS',
      'MAX_NAME_LENGTH',
      'MAX_OUTPUT_FRAME_SEQ',
      'MAX_TRACESTATE_LENGTH',
      'NAME_PATTERN',
      'OUTPUT_FRAME_KIND',
      'OutputFrame',
      'OutputMessage',
      'PROTOCOL_VERSION',
      'PROTOCOL_VERSIONS',
      'PartialOutput',
      'ProgressMessage',
      'QUALIFIER',
      'ResultMessage',
      'SIGNAL_EXIT_BASE',
      'SUBPROTOCOL',
      'SUBPROTOCOLS',
      'ServerMessage',
      'TRACEPARENT_PATTERN',
      'TickCoalescer',
      'ToolAnnotations',
      'ToolSpec',
      'Traceparent',
      'TurnCoalescer',
      'WelcomeLimits',
      'WelcomeMessage',
      'WelcomeOutput',
      'WireBytes',
      'WireError',
      'appendReason',
      'checkToolSpec',
      'checkTracestate',
      'closeCodeName',
      'decodeHostMessage',
      'decodeOutputFrame',
      'decodeServerMessage',
      'encodeMessage',
      'encodeOutputFrame',
      'failureCapture',
      'formatAjvErrors',
      'formatTraceparent',
      'fromWire',
      'headTail',
      'hostMessageSchemas',
      'outputFrameHeaderBytes',
      'outputFrameInPlace',
      'parseTraceparent',
      'serverMessageSchemas',
      'subprotocolOf',
      'toWire',
      'toolSpecSchema',
      'utf8',
      'versionOfSubprotocol',
    ]);
  });

  it('@toolwire/protocol/constants: the tables alone, a subset of the root', () => {
    expect(runtime(protocolConstants)).toEqual([
      'CloseCode',
      'Defaults',
      'ExitCode',
      'FailureKind',
      'MAX_NAME_LENGTH',
      'NAME_PATTERN',
      'QUALIFIER',
      'SIGNAL_EXIT_BASE',
      'closeCodeName',
    ]);
    for (const [name, value] of Object.entries(protocolConstants)) expect(protocol[name as keyof typeof protocol]).toBe(value);
  });

  it('@toolwire/server', () => {
    expect(runtime(server)).toEqual([
      'CloseCode',
      'ClusterError',
      'DEADLINE_META',
      'ExitCode',
      'OUTPUT_NOTIFICATION',
      'RecordDirError',
      'STREAM_META',
      'ServerDefaults',
      'ToolwireServer',
      'WORKSPACE_META',
      'argumentsAsSent',
      'generateToken',
    ]);
    expect(exportedNames('server')).toEqual([
      'CallStatus',
      'CallerCredential',
      'CloseCode',
      'CloseCodeValue',
      'ClusterError',
      'ClusterOptions',
      'CompletedResult',
      'CredentialsUpdate',
      'DEADLINE_META',
      'Envelope',
      'ExecuteRequest',
      'ExecuteResult',
      'ExitCode',
      'ExitCodeValue',
      'Fallback',
      'FinishedCall',
      'HostCredential',
      'HostInfo',
      'HostStatus',
      'InjectedTool',
      'ListenInfo',
      'Logger',
      'Naming',
      'NatsCredentials',
      'NatsTls',
      'OUTPUT_NOTIFICATION',
      'OutputChunk',
      'OutputListener',
      'ProgressListener',
      'Projection',
      'RecordDirError',
      'RoutedCall',
      'RoutedCapture',
      'STREAM_META',
      'ServerDefaults',
      'ServerTls',
      'StatusSnapshot',
      'ToolControl',
      'ToolControlDecision',
      'ToolControlRequest',
      'ToolInjection',
      'ToolStatus',
      'ToolwireServer',
      'ToolwireServerOptions',
      'WORKSPACE_META',
      'argumentsAsSent',
      'generateToken',
    ]);
  });

  it('@toolwire/client', () => {
    expect(runtime(client)).toEqual([
      'CallAborted',
      'ExitCode',
      'HostReplacedError',
      'MAX_MANIFEST_BYTES',
      'ManifestError',
      'McpDefaults',
      'ServerRefusedError',
      'TokenRefusedError',
      'ToolHost',
      'checkExecutable',
      'loadManifest',
      'loadManifestAndServers',
      'loadMcpConfig',
    ]);
    expect(exportedNames('client')).toEqual([
      'AbortFailure',
      'CallAborted',
      'Capture',
      'CheckExecutableOptions',
      'CommandSpec',
      'CommandToolSpec',
      'ExitCode',
      'ExitCodeValue',
      'HostReplacedError',
      'InProcessToolSpec',
      'Logger',
      'MAX_MANIFEST_BYTES',
      'ManifestError',
      'McpDefaults',
      'McpServerConfig',
      'RefusalKind',
      'ServerRefusedError',
      'TokenRefusedError',
      'ToolContext',
      'ToolHandler',
      'ToolHost',
      'ToolHostEvents',
      'ToolHostOptions',
      'ToolSetChange',
      'checkExecutable',
      'loadManifest',
      'loadManifestAndServers',
      'loadMcpConfig',
    ]);
  });

  it('@toolwire/cli', () => {
    expect(runtime(cli)).toEqual([
      'VERSION',
      'callCommand',
      'credentialsPath',
      'hostCommand',
      'processIO',
      'readLocalCredentials',
      'run',
      'serveCommand',
      'statusCommand',
      'tokenCommand',
      'toolsCommand',
      'toolwireHome',
    ]);
    expect(exportedNames('cli')).toEqual([
      'CallCommandDeps',
      'CliIO',
      'HostCommandDeps',
      'LocalCredentials',
      'ServeIo',
      'SignalSource',
      'TokenIo',
      'VERSION',
      'callCommand',
      'credentialsPath',
      'hostCommand',
      'processIO',
      'readLocalCredentials',
      'run',
      'serveCommand',
      'statusCommand',
      'tokenCommand',
      'toolsCommand',
      'toolwireHome',
    ]);
  });

  it('@toolwire/testing', () => {
    expect(runtime(testing)).toEqual([
      'CaptureAssertion',
      'FaultProxy',
      'ProxyConnection',
      'closeAll',
      'expectCapture',
      'generateToken',
      'netnsSupport',
      'openHandles',
      'startHost',
      'startProxy',
      'startRogueHost',
      'startServer',
      'waitForCallInFlight',
      'waitForHost',
      'waitForTools',
      'waitForToolsChanged',
      'waitUntil',
    ]);
    expect(exportedNames('testing')).toEqual([
      'CallOptions',
      'CaptureAssertion',
      'CaptureLike',
      'FaultControls',
      'FaultProxy',
      'HostTarget',
      'HostTools',
      'InProcessTool',
      'NetnsLink',
      'NetnsSupport',
      'ProxyConnection',
      'ProxyTarget',
      'RogueBehaviour',
      'RogueCall',
      'RogueHost',
      'RogueScript',
      'RogueTarget',
      'StartHostOptions',
      'StartServerOptions',
      'TestHost',
      'TestServer',
      'ToolMap',
      'WaitOptions',
      'closeAll',
      'expectCapture',
      'generateToken',
      'netnsSupport',
      'openHandles',
      'startHost',
      'startProxy',
      'startRogueHost',
      'startServer',
      'waitForCallInFlight',
      'waitForHost',
      'waitForTools',
      'waitForToolsChanged',
      'waitUntil',
    ]);
  });

  it('test seams are not public options (checked by tsc: newCallId is not a ToolwireServerOptions key)', () => {
    const noSeam: 'newCallId' extends keyof ToolwireServerOptions ? never : true = true;
    expect(noSeam).toBe(true);
  });
});
