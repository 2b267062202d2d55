// A bounded raw HTTP/1.1 exchange for the adversarial suites: the attack's bytes on a fresh TCP
// connection to 127.0.0.1, one response read by Content-Length (or until the server closes), and
// a deadline after which the exchange fails instead of hanging.
import { connect } from 'node:net';
import { readdirSync } from 'node:fs';

export interface RawAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export function rawRequest(port: number, bytes: string, deadlineMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (err: Error | undefined, answer?: RawAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err !== undefined) reject(err);
      else resolve(answer as RawAnswer);
    };
    const timer = setTimeout(() => settle(new Error(`no answer within ${deadlineMs} ms`)), deadlineMs);
    const parse = (closed: boolean): void => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) {
        if (closed) settle(new Error(`connection closed without a response head: ${JSON.stringify(text)}`));
        return;
      }
      const lines = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const c = l.indexOf(':');
        headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
      }
      const body = text.slice(split + 4);
      const length = headers['content-length'];
      if (!closed && (length === undefined || Buffer.byteLength(body, 'latin1') < Number(length))) return;
      settle(undefined, { status: Number((lines[0] ?? '').split(' ')[1]), headers, body });
    };
    sock.on('data', (c: Buffer) => {
      chunks.push(c);
      parse(false);
    });
    sock.on('close', () => parse(true));
    sock.on('error', (e) => {
      if (chunks.length === 0) settle(e);
    });
    sock.write(bytes);
  });
}

/** Descriptors this process has open (Linux). */
export function openDescriptors(): number {
  return readdirSync('/proc/self/fd').length;
}
