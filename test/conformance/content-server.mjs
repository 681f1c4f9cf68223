// A small MCP stdio server for `pnpm conformance`: the tools whose results carry image, audio and
// embedded-resource content blocks. The harness's tool host serves it as an MCP tool source
// (issue 14), so those blocks cross the wire and the door unchanged.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

// A 1×1 red PNG and a 44-byte silent WAV.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=';
const image = { type: 'image', data: PNG, mimeType: 'image/png' };
const audio = { type: 'audio', data: WAV, mimeType: 'audio/wav' };
const resource = { type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } };
const results = {
  test_image_content: [image],
  test_audio_content: [audio],
  test_embedded_resource: [resource],
  test_multiple_content_types: [{ type: 'text', text: 'Multiple content types test:' }, image, resource],
};
const none = { type: 'object', properties: {} };
const server = new Server({ name: 'toolwire-conformance-content', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: Object.keys(results).map((name) => ({ name, description: `returns ${name.slice(5).replace(/_/g, ' ')}`, inputSchema: none })),
}));
server.setRequestHandler(CallToolRequestSchema, (request) => {
  const content = results[request.params.name];
  if (content === undefined) return { content: [{ type: 'text', text: `no tool ${request.params.name}` }], isError: true };
  return { content };
});
await server.connect(new StdioServerTransport());
