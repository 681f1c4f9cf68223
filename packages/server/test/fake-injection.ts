/** A stand-in for the router in unit tests: advertised tools plus a handler per tool name. */
import { EventEmitter } from 'node:events';
import type { InjectedTool, RoutedCall, RoutedCapture, ToolInjection } from '../src/seam.js';

/** Answers one routed call. */
export type Handler = (call: RoutedCall) => Promise<RoutedCapture>;

/** `tools()` returns `list`; `route()` records the call and runs its handler, or answers "not mine". */
export class FakeInjection extends EventEmitter implements ToolInjection {
  list: InjectedTool[] = [];
  readonly handlers = new Map<string, Handler>();
  readonly routed: RoutedCall[] = [];
  tools(): InjectedTool[] {
    return this.list;
  }
  async route(call: RoutedCall): Promise<RoutedCapture | undefined> {
    this.routed.push(call);
    const handler = this.handlers.get(call.name);
    return handler ? handler(call) : undefined;
  }
}
