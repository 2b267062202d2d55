// Usage: node bench/thrift/backend.mjs PORT (a raw framed-binary echo backend for bench/thrift/load.mjs).
// Framed binary echo backend: answers each call with a fixed small REPLY carrying the call's seqid.
import { createServer } from 'node:net';
const name = Buffer.from('echo');
const reply = Buffer.alloc(4 + 8 + name.length + 4 + 3 + 4 + 2 + 1);
let o = 0;
reply.writeInt32BE(reply.length - 4, o); o += 4;
reply.writeInt32BE(0x80010002 | 0, o); o += 4;
reply.writeInt32BE(name.length, o); o += 4;
name.copy(reply, o); o += name.length;
const seqAt = o; o += 4;
reply[o++] = 11; reply.writeInt16BE(0, o); o += 2; reply.writeInt32BE(2, o); o += 4; reply.write('ok', o); o += 2; reply[o++] = 0;
createServer((s) => {
  s.setNoDelay(true);
  let buf = Buffer.alloc(0);
  s.on('data', (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    while (buf.length >= 4) {
      const len = buf.readInt32BE(0);
      if (buf.length < 4 + len) break;
      const m = buf.subarray(4, 4 + len);
      const nlen = m.readInt32BE(4);
      const seq = m.readInt32BE(8 + nlen);
      const r = Buffer.from(reply);
      r.writeInt32BE(seq, seqAt);
      s.write(r);
      buf = buf.subarray(4 + len);
    }
  });
  s.on('error', () => {});
}).listen(Number(process.argv[2]), '127.0.0.1');
