/** Version of the wire protocol spoken in `hello` and `welcome`. A server refuses other versions (close 1002). */
export const PROTOCOL_VERSION = 1;
/** WebSocket subprotocol name offered by hosts (`Sec-WebSocket-Protocol`). */
export const SUBPROTOCOL = 'toolwire.v1';
