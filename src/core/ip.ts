import { isIP } from 'node:net';

// IP literals to and from the 4- or 16-byte form of the mesh API's `Endpoint.address`.

/** The bytes of an IP literal, or undefined when `host` is not one (an unresolved host name). */
export function ipToBytes(host: string): { readonly family: 4 | 6; readonly bytes: Buffer } | undefined {
  const family = isIP(host);
  if (family === 4) return { family, bytes: Buffer.from(host.split('.').map(Number)) };
  if (family !== 6) return undefined;
  let text = host;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // A trailing dotted quad (::ffff:1.2.3.4) is two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::') as [string, string | undefined];
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), i * 2));
  return { family, bytes };
}

/** The text of a 4- or 16-byte address (IPv6 in its shortest form), or undefined for another length. */
export function bytesToIp(bytes: Uint8Array): string | undefined {
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  if (bytes.length !== 16) return undefined;
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  // The URL parser prints IPv6 hosts in their canonical compressed form.
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
