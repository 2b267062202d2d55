// Routing-loop attacks, as request bytes for any router whose dtab sends `host` back to itself:
// a plain request, a WebSocket upgrade, and a diagnostic TRACE. Shared by the adversarial tests of
// every router and scripts that replay the attacks.

/** A plain GET for `host` (the connection closes after the answer). */
export function loopingGet(host: string): string {
  return `GET /loop HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
}

/** A WebSocket upgrade for `host`. */
export function loopingUpgrade(host: string): string {
  return (
    `GET /ws HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'
  );
}

/** A diagnostic TRACE for `host` that would be forwarded `maxForwards` times. */
export function loopingTrace(host: string, maxForwards = 5): string {
  return `TRACE / HTTP/1.1\r\nHost: ${host}\r\nMax-Forwards: ${maxForwards}\r\nprx-add-context: true\r\nConnection: close\r\n\r\n`;
}
