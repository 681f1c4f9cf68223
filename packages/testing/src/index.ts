/**
 * `@toolwire/testing` — a fault-injection kit for integration test rigs: a real toolwire server,
 * real tool hosts (in this process or as child processes), a TCP fault proxy between them, and
 * misbehaving hosts, in a few lines of any test runner. Every handle closes with `close()` or
 * `await using`; {@link closeAll} closes what a test left open, and child processes die with the
 * test runner's process.
 *
 * @packageDocumentation
 */
export { startServer, generateToken, type StartServerOptions, type TestServer, type CallOptions } from './server.js';
export { startHost, type HostTarget, type StartHostOptions, type TestHost } from './host.js';
export type { HostTools, ToolMap, InProcessTool } from './tools.js';
export { startProxy, FaultProxy, ProxyConnection, type FaultControls, type ProxyTarget } from './proxy.js';
export { startRogueHost, type RogueBehaviour, type RogueCall, type RogueHost, type RogueScript, type RogueTarget } from './rogue.js';
export { expectCapture, CaptureAssertion, type CaptureLike } from './expect.js';
export { waitUntil, waitForTools, waitForToolsChanged, waitForHost, waitForCallInFlight, type WaitOptions } from './wait.js';
export { closeAll, openHandles } from './cleanup.js';
export { netnsSupport, type NetnsSupport } from './netns.js';
export type { NetnsLink } from './netns-link.js';
