// HTTP/1.1 sent to a plaintext HTTP/2 server (prx's h2 listener, and so any h2 router's plaintext
// server): requests that must be refused over HTTP/1.1 with `prx-err` and `connection: close`, never
// upgraded and never left hanging. Each attack takes the target's port and the limits it was
// configured with, and asserts the answer; rawRequest bounds every wait.
import assert from 'node:assert/strict';
import { rawRequest, type RawAnswer } from './raw-client.js';

export const SPEAKS_H2 = 'this router speaks HTTP/2: use prior knowledge or Upgrade: h2c';
/** A valid HTTP2-Settings value: MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 1 MiB. */
export const GOOD_SETTINGS = Buffer.from('000300000064000400100000', 'hex').toString('base64url');
const UPGRADE = `Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: ${GOOD_SETTINGS}\r\n`;

export interface H2PlaintextLimits {
  readonly maxHeadBytes: number;
  readonly maxUpgradeBodyBytes: number;
}

export interface H2PlaintextAttack {
  readonly name: string;
  run(port: number, limits: H2PlaintextLimits): Promise<void>;
}

export const upgradeHead = (headers: string, method = 'GET', version = 'HTTP/1.1'): string =>
  `${method} /x ${version}\r\nHost: svc\r\n${headers}\r\n`;

function refused(a: RawAnswer, status: number, prxErr: RegExp | string): void {
  assert.equal(a.status, status, JSON.stringify(a));
  if (typeof prxErr === 'string') assert.equal(a.headers['prx-err'], prxErr);
  else assert.match(a.headers['prx-err'] ?? '', prxErr);
  assert.equal(a.headers['connection'], 'close');
}

/** An h2c upgrade RFC 7540 §3.2 does not allow: 505, and prx-err says how to get in and what was wrong. */
function brokenUpgrade(name: string, bytes: string, reason: RegExp): H2PlaintextAttack {
  return {
    name: `an h2c upgrade with ${name}: 505, prx-err says why`,
    async run(port) {
      const a = await rawRequest(port, bytes);
      refused(a, 505, reason);
      assert.ok(a.headers['prx-err']?.startsWith(SPEAKS_H2), a.headers['prx-err']);
    },
  };
}

export const H2_PLAINTEXT_ATTACKS: readonly H2PlaintextAttack[] = [
  {
    name: 'a plain HTTP/1.1 request: 505, prx-err, text body',
    async run(port) {
      const a = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: svc\r\n\r\n');
      refused(a, 505, SPEAKS_H2);
      assert.match(a.headers['content-type'] ?? '', /^text\/plain/);
      assert.equal(a.body, `${SPEAKS_H2}\n`);
    },
  },
  {
    name: 'an upgrade to something else (websocket): 505',
    async run(port) {
      refused(await rawRequest(port, upgradeHead('Connection: Upgrade\r\nUpgrade: websocket\r\n')), 505, SPEAKS_H2);
    },
  },
  {
    name: 'an HTTP/2.0 request line: 505',
    async run(port) {
      refused(await rawRequest(port, 'GET / HTTP/2.0\r\nHost: svc\r\n\r\n'), 505, `${SPEAKS_H2} (HTTP version 2.0 is not supported)`);
    },
  },
  brokenUpgrade('no HTTP2-Settings', upgradeHead('Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n'), /no HTTP2-Settings header/),
  brokenUpgrade('two HTTP2-Settings', upgradeHead(`${UPGRADE}HTTP2-Settings: ${GOOD_SETTINGS}\r\n`), /more than one HTTP2-Settings/),
  brokenUpgrade('bad base64url', upgradeHead('Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAM+AABk/AQCAA\r\n'), /not base64url/),
  brokenUpgrade('a partial setting', upgradeHead('Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAA\r\n'), /not a whole number of settings/),
  brokenUpgrade(
    'ENABLE_PUSH 2',
    upgradeHead(`Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: ${Buffer.from('000200000002', 'hex').toString('base64url')}\r\n`),
    /ENABLE_PUSH 2/,
  ),
  brokenUpgrade('Connection not listing HTTP2-Settings', upgradeHead(`Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: ${GOOD_SETTINGS}\r\n`), /Connection must list HTTP2-Settings/),
  brokenUpgrade('HTTP/1.0', upgradeHead(UPGRADE, 'GET', 'HTTP/1.0'), /needs HTTP\/1\.1/),
  brokenUpgrade('no Host', `GET /x HTTP/1.1\r\n${UPGRADE}\r\n`, /no Host header/),
  brokenUpgrade('CONNECT', `CONNECT svc:443 HTTP/1.1\r\nHost: svc:443\r\n${UPGRADE}\r\n`, /CONNECT cannot be upgraded/),
  {
    name: 'a chunked upgrade: 400, not upgraded',
    async run(port) {
      const a = await rawRequest(port, `${upgradeHead(`${UPGRADE}Transfer-Encoding: chunked\r\n`, 'POST')}5\r\nhello\r\n0\r\n\r\n`);
      refused(a, 400, /Content-Length, not chunked/);
    },
  },
  {
    name: 'an upgrade body past the limit: 413 on the head alone (the body is never sent)',
    async run(port, limits) {
      const size = Math.max(limits.maxUpgradeBodyBytes, 65535) + 1;
      refused(await rawRequest(port, upgradeHead(`${UPGRADE}Content-Length: ${size}\r\n`, 'POST')), 413, new RegExp(`${size} bytes exceeds \\d+ bytes`));
    },
  },
  {
    name: 'a head past maxHeadBytes, still arriving: 431',
    async run(port, limits) {
      refused(await rawRequest(port, `GET / HTTP/1.1\r\nHost: svc\r\nX-Pad: ${'p'.repeat(limits.maxHeadBytes + 100)}`), 431, /longer than \d+ bytes/);
    },
  },
  {
    name: 'a whole head just past maxHeadBytes: 431',
    async run(port, limits) {
      const head = `GET / HTTP/1.1\r\nHost: svc\r\nX-Pad: `;
      refused(await rawRequest(port, `${head}${'p'.repeat(limits.maxHeadBytes - head.length)}\r\n\r\n`), 431, /longer than \d+ bytes/);
    },
  },
  ...[
    ['a TLS ClientHello', Buffer.from('16030100a5010000a10303', 'hex').toString('latin1')],
    ['binary bytes', '\x00\x01\x02\x03'],
    ['bare LF line ends', 'GET / HTTP/1.1\nHost: svc\n\n'],
    ['obsolete line folding', 'GET / HTTP/1.1\r\nHost: svc\r\n bad folding\r\n\r\n'],
  ].map(
    ([name, bytes]): H2PlaintextAttack => ({
      // A short deadline: garbage is refused on sight, not when a limit or the head timeout is reached.
      name: `garbage (${name}): 400 at once`,
      async run(port) {
        refused(await rawRequest(port, bytes!, 3000), 400, /./);
      },
    }),
  ),
];
